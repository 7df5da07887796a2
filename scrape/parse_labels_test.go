package scrape

import (
	"strings"
	"testing"
)

// TestLabelTooLongRefusesModel: a model whose wanted samples carry a label
// name or value over the limits is refused (ReasonLabelTooLong), named by
// its first bytes and its length only; the other models are kept; with no
// model left the scrape fails with that reason. A value at the limit is
// accepted, and an unwanted sample is never checked.
func TestLabelTooLongRefusesModel(t *testing.T) {
	les, counts := []string{"0.1", "+Inf"}, []string{"1", "2"}
	huge := strings.Repeat("m", 1<<20)
	atLimit := strings.Repeat("a", MaxLabelValueLength)
	longName := strings.Repeat("n", MaxLabelNameLength+1)
	good := hist(ttftName, "good", "0", les, counts, "1")

	t.Run("huge model_name", func(t *testing.T) {
		body := good + hist(ttftName, huge, "0", les, counts, "1") + hist(ttftName, atLimit, "0", les, counts, "1") +
			"unwanted_family{model_name=\"" + huge + "\"} 1\n"
		snap, err := Parse([]byte(body), ctText004, VLLM, scrapeTime)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := snap.Models["good"]; !ok || len(snap.Models) != 2 {
			t.Errorf("models %v, want good and the one at the limit", keys(snap.Models))
		}
		if _, ok := snap.Models[atLimit]; !ok {
			t.Errorf("a model_name of exactly %d bytes was refused", MaxLabelValueLength)
		}
		if len(snap.Rejected) != 1 {
			t.Fatalf("rejections %+v, want one", snap.Rejected)
		}
		r := snap.Rejected[0]
		if r.Err.Reason != ReasonLabelTooLong || len(r.Model) > 64 || !strings.Contains(r.Model, "(1048576 bytes)") {
			t.Errorf("rejection of the huge model: reason %q, model %q", r.Err.Reason, r.Model)
		}
		if msg := r.Err.Error(); len(msg) > 300 || !strings.Contains(msg, "model_name: value of 1048576 bytes, over the limit of 1024") {
			t.Errorf("message (%d bytes) %.300q", len(msg), msg)
		}
	})
	t.Run("long label name", func(t *testing.T) {
		body := good + strings.Replace(hist(ttftName, "other", "0", les, counts, "1"), "engine=", longName+"=", 1)
		snap, err := Parse([]byte(body), ctText004, VLLM, scrapeTime)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := snap.Models["other"]; ok || len(snap.Rejected) != 1 || snap.Rejected[0].Model != "other" || snap.Rejected[0].Err.Reason != ReasonLabelTooLong {
			t.Errorf("models %v, rejections %+v: want other refused for label_too_long", keys(snap.Models), snap.Rejected)
		}
	})
	t.Run("nothing left", func(t *testing.T) {
		_, err := Parse([]byte(hist(ttftName, huge, "0", les, counts, "1")), ctText004, VLLM, scrapeTime)
		if FailureReason(err) != ReasonLabelTooLong || len(err.Error()) > 300 {
			t.Errorf("error %.300v (reason %q), want %q in a short message", err, FailureReason(err), ReasonLabelTooLong)
		}
	})
}
