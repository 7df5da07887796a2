package recording

import "fmt"

// Outcome tallies the scrapes of a recording as they are taken, so that a
// command can tell a recording of a live target from one of failures only
// (a 404, a refused port), and say why instead of succeeding silently.
type Outcome struct {
	// Scrapes and Failed count the entries seen and those with an Error.
	Scrapes, Failed int
	// LastError is the error of the last failed entry.
	LastError string
}

// Add counts one entry.
func (o *Outcome) Add(e Entry) {
	o.Scrapes++
	if e.Error != "" {
		o.Failed++
		o.LastError = e.Error
	}
}

// Err is nil when at least one scrape succeeded. Otherwise it says that
// nothing usable was recorded and gives the last failure's error, which
// names its cause (the HTTP status, the refused connection).
func (o Outcome) Err() error {
	switch {
	case o.Scrapes == 0:
		return fmt.Errorf("no scrape was taken")
	case o.Failed == o.Scrapes:
		return fmt.Errorf("all %d scrapes failed; the last: %s", o.Scrapes, o.LastError)
	}
	return nil
}
