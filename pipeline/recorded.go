package pipeline

import (
	"errors"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// IngestRecorded feeds one recorded scrape to the pipeline exactly as the
// daemon feeds a live one, with the recorded time: replay and report use it.
// A recorded failure or an exposition that does not parse is counted as a
// failure of the target and returned.
func (p *Pipeline) IngestRecorded(e recording.Entry) error {
	profile, err := p.Profile(e.Target)
	if err != nil {
		return err
	}
	if e.Error != "" {
		err := errors.New(e.Error)
		p.RecordFailure(e.Target, "recorded_error", err, e.Time, 0)
		return err
	}
	snap, err := scrape.Parse([]byte(e.Body), e.ContentType, profile, e.Time)
	if err != nil {
		p.RecordFailure(e.Target, scrape.FailureReason(err), err, e.Time, 0)
		return err
	}
	return p.Ingest(e.Target, snap, 0)
}
