package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Table is what the text and markdown formats render: a title, a header, rows
// of cells and notes under it.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
	Notes  []string
}

// writeText renders an aligned table: the first column left-aligned, the
// others right-aligned, two spaces apart.
func (t Table) writeText(w io.Writer) error {
	widths := make([]int, len(t.Header))
	all := append([][]string{t.Header}, t.Rows...)
	for _, r := range all {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	for ri, r := range all {
		var line strings.Builder
		for i := range widths {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				line.WriteString(c + pad)
			default:
				line.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		if ri == 0 {
			total := 0
			for _, wd := range widths {
				total += wd + 2
			}
			b.WriteString(strings.Repeat("-", total-2) + "\n")
		}
	}
	for _, n := range t.Notes {
		b.WriteString("note: " + n + "\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdown renders a GitHub-flavoured markdown table.
func (t Table) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	if t.Title != "" {
		b.WriteString("### " + mdEscape(t.Title) + "\n\n")
	}
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.Header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + mdEscape(c) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for i := range t.Header {
		if i == 0 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			b.WriteString("- " + mdEscape(n) + "\n")
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// f2 formats like vLLM's summary ("%.2f"), with "inf" for infinities and
// "-" for NaN.
func f2(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.2f", v)
}

// rng formats a bounded number scaled by k as "est [lower, upper]", or the
// single number when exact.
func rng(r Range, k float64) string {
	e, lo, hi := float64(r.Estimate)*k, float64(r.Lower)*k, float64(r.Upper)*k
	if r.isExact() {
		return f2(e)
	}
	return fmt.Sprintf("%s [%s, %s]", f2(e), short(lo), short(hi))
}

// ratio formats a bounded ratio with four decimals: "0.9812 [0.972, 0.985]".
func ratio(r Range) string {
	e, lo, hi := float64(r.Estimate), float64(r.Lower), float64(r.Upper)
	if r.isExact() {
		return fmt.Sprintf("%.4f", e)
	}
	return fmt.Sprintf("%.4f [%.4f, %.4f]", e, lo, hi)
}

// short formats a bound compactly: bucket edges read best as written.
func short(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	if math.IsInf(v, -1) {
		return "-Inf"
	}
	return fmtG(math.Round(v*1000) / 1000)
}
