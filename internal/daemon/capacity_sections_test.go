package daemon

import (
	"bytes"
	"testing"
)

// TestStateSections splits what joinState laid out back into its two
// sections, reads a file without sections as all pipeline, refuses the
// capacity section alone when only it is damaged, and refuses a pipeline
// section whose checksum fails.
func TestStateSections(t *testing.T) {
	pipe, capacity := []byte("pipeline state"), []byte("capacity state")
	joined := joinState(pipe, capacity)
	flipped := bytes.Clone(joined)
	flipped[len(flipped)-2] ^= 1
	pipeFlipped := bytes.Clone(joined)
	pipeFlipped[len(sectionsMagic)+6] ^= 1 // a byte of the pipeline's state
	cases := []struct {
		name            string
		data            []byte
		pipe, capacity  []byte
		pipeErr, capErr bool
	}{
		{name: "joined", data: joined, pipe: pipe, capacity: capacity},
		{name: "no sections", data: pipe, pipe: pipe},
		{name: "capacity flipped", data: flipped, pipe: pipe, capErr: true},
		{name: "capacity truncated", data: joined[:len(joined)-3], pipe: pipe, capErr: true},
		{name: "capacity grown", data: append(bytes.Clone(joined), 0), pipe: pipe, capErr: true},
		{name: "pipeline truncated", data: joined[:len(sectionsMagic)+5], pipeErr: true},
		{name: "pipeline flipped", data: pipeFlipped, pipeErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, c, pErr, cErr := splitState(tc.data)
			if !bytes.Equal(p, tc.pipe) || !bytes.Equal(c, tc.capacity) || (pErr != nil) != tc.pipeErr || (cErr != nil) != tc.capErr {
				t.Fatalf("split: pipeline %q, capacity %q, errors %v, %v; want %q, %q, errors %v, %v", p, c, pErr, cErr, tc.pipe, tc.capacity, tc.pipeErr, tc.capErr)
			}
		})
	}
}

// FuzzStateSections splits arbitrary bytes: never a panic, sections that
// are parts of the input, and joining what split returns gives the input
// back whenever both sections were read.
func FuzzStateSections(f *testing.F) {
	f.Add(joinState([]byte("pipeline"), []byte("capacity")))
	f.Add([]byte(sectionsMagic))
	f.Add([]byte("old state"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, c, pErr, cErr := splitState(data)
		if pErr != nil && (p != nil || c != nil) {
			t.Fatalf("sections %q, %q beside a damaged pipeline section", p, c)
		}
		if !bytes.Contains(data, p) || !bytes.Contains(data, c) {
			t.Fatal("a section that is not part of the input")
		}
		if pErr == nil && cErr == nil && c != nil && !bytes.Equal(joinState(p, c), data) {
			t.Fatalf("join(split(%q)) = %q", data, joinState(p, c))
		}
	})
}
