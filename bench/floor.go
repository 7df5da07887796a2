package bench

import (
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// Floor iterates Prometheus's textparse over body and reads every series'
// raw bytes and value, doing nothing else: the least any parse built on
// textparse can cost. It returns the number of series read.
func Floor(body []byte, contentType string) (int, error) {
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{
		FallbackContentType: "text/plain",
	})
	if p == nil {
		return 0, fmt.Errorf("textparse: content type %q: %w", contentType, err)
	}
	n := 0
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("textparse: series %d: %w", n, err)
		}
		if et == textparse.EntrySeries {
			p.Series()
			n++
		}
	}
}
