package daemon

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity/online"
)

// The state file holds the pipeline's state and, after it, the capacity
// learners' (package capacity/online) in a section of its own, so that a
// damaged capacity section is refused alone and the history survives it:
//
//	sectionsMagic
//	uvarint len(pipeline) | crc32 (IEEE, big-endian) of the pipeline bytes | pipeline bytes
//	uvarint len(capacity) | crc32 (IEEE, big-endian) of the capacity bytes | capacity bytes
//
// A file without the magic is a state written before the capacity section
// existed: all of it is the pipeline's, and the learners start fresh.
const sectionsMagic = "vllm-slo-exporter state, sections v1\n"

// joinState lays the pipeline's and the capacity learners' states out as
// the state file holds them.
func joinState(pipeline, capacity []byte) []byte {
	out := make([]byte, 0, len(sectionsMagic)+len(pipeline)+len(capacity)+2*binary.MaxVarintLen64+4)
	out = append(out, sectionsMagic...)
	out = binary.AppendUvarint(out, uint64(len(pipeline)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(pipeline))
	out = append(out, pipeline...)
	out = binary.AppendUvarint(out, uint64(len(capacity)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(capacity))
	return append(out, capacity...)
}

// splitState returns the pipeline's and the capacity learners' sections of
// a state file. A file without the magic is all pipeline (capacity nil,
// no error). The pipeline's section is returned whenever its length can be
// read, even when the capacity section is damaged (capErr says how), so
// that the history is restored in any case; a pipeline section that cannot
// be cut out, or whose checksum fails, is pipeErr and no capacity section
// is returned either. The pipeline's checksum is what refuses a flipped
// byte there: its encoding would often decode one as another value.
func splitState(data []byte) (pipeline, capacity []byte, pipeErr, capErr error) {
	rest, ok := bytes.CutPrefix(data, []byte(sectionsMagic))
	if !ok {
		return data, nil, nil, nil
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || len(rest)-k < 4 || n > uint64(len(rest)-k-4) {
		return nil, nil, errors.New("state file: the pipeline section's length is damaged"), nil
	}
	sum := binary.BigEndian.Uint32(rest[k:])
	pipeline, rest = rest[k+4:k+4+int(n)], rest[k+4+int(n):]
	if got := crc32.ChecksumIEEE(pipeline); got != sum {
		return nil, nil, fmt.Errorf("state file: the pipeline section is damaged (checksum %08x, saved %08x)", got, sum), nil
	}
	n, k = binary.Uvarint(rest)
	if k <= 0 || len(rest)-k < 4 || n != uint64(len(rest)-k-4) {
		return pipeline, nil, nil, fmt.Errorf("state file: the capacity section's length is damaged or the file is truncated (%d bytes after the pipeline section)", len(rest))
	}
	sum, capacity = binary.BigEndian.Uint32(rest[k:]), rest[k+4:]
	if got := crc32.ChecksumIEEE(capacity); got != sum {
		return pipeline, nil, nil, fmt.Errorf("state file: the capacity section is damaged (checksum %08x, saved %08x)", got, sum)
	}
	return pipeline, capacity, nil, nil
}

// stateToSave is the state file's content: the pipeline's state with the
// capacity learners' section after it.
func (d *Daemon) stateToSave(pipeline []byte) ([]byte, error) {
	capacity, err := d.capacity.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return joinState(pipeline, capacity), nil
}

// restoreCapacity restores the capacity learners from the state file's
// section; a section that is damaged or refused is logged, and learning
// starts fresh with nothing else lost.
func (d *Daemon) restoreCapacity(path string, section []byte, damaged error) {
	if damaged == nil && section == nil {
		return // a state written before the section existed
	}
	err := damaged
	if err == nil {
		err = d.capacity.UnmarshalBinary(section)
	}
	if err != nil {
		d.logger.Error("capacity section of the state file not usable: capacity learning starts fresh; the history is restored apart from it", "file", path, "err", err)
		return
	}
	d.logger.Info("capacity learners restored", "file", path, "estimates", len(d.capacity.Reports()))
}

// capacityStage is the capacity learners' part of every evaluation: the
// pipeline refits them on its report, which then holds their estimates,
// and carries the headroom tickets with its own alerts, at the margin and
// hold of the configuration in force, so that the notifier, /metrics and
// the console see them as they see the rest of the report.
func (d *Daemon) capacityStage() online.Stage {
	return online.Stage{Learners: d.capacity, Policy: func() online.HeadroomPolicy {
		c := d.config.get().Capacity
		return online.HeadroomPolicy{Margin: c.HeadroomMargin, Hold: time.Duration(c.HeadroomFor)}
	}}
}
