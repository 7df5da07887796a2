package scrape

import "bytes"

// lineCounter numbers the entries textparse returns, for error messages.
//
// Both formats Parse reads are line-based: in the Prometheus text format and
// in OpenMetrics every line is one entry (a HELP, TYPE or UNIT line, a
// comment or a sample), except that the text format ignores blank lines
// (only spaces and tabs). So the entry after a given line starts on the next
// line, or the next non-blank one in the text format. The one way an entry
// spans more lines is a raw line feed inside a quoted name or label value
// (both formats require it escaped as `\n`, but textparse accepts it); the
// entry's name or series bytes, which the parser returns verbatim, then hold
// those line feeds, so counting them keeps the numbering right. (A raw line
// feed inside an OpenMetrics exemplar would not be seen and would shift the
// numbers of later lines; only messages would suffer.)
type lineCounter struct {
	body       []byte
	skipsBlank bool // the text format; OpenMetrics allows no blank line
	off        int  // start of the first line no entry has claimed
	line       int  // that line's 1-based number
}

func newLineCounter(body []byte, skipsBlank bool) lineCounter {
	return lineCounter{body: body, skipsBlank: skipsBlank, line: 1}
}

// entry claims the lines of the entry textparse just returned and reports the
// line it starts on. text is the part of the entry that may hold raw line
// feeds: a sample's series bytes, a HELP, TYPE or UNIT line's name.
func (lc *lineCounter) entry(text []byte) int {
	start := lc.next()
	for range 1 + bytes.Count(text, []byte{'\n'}) {
		lc.skipLine()
	}
	return start
}

// next is the line the next entry starts on: where a syntax error the parser
// reports after the last entry lies.
func (lc *lineCounter) next() int {
	if !lc.skipsBlank {
		return lc.line
	}
	for lc.off < len(lc.body) {
		rest := lc.body[lc.off:]
		end := bytes.IndexByte(rest, '\n')
		if end < 0 || len(bytes.Trim(rest[:end], " \t")) > 0 {
			break
		}
		lc.off += end + 1
		lc.line++
	}
	return lc.line
}

// skipLine moves past the current line.
func (lc *lineCounter) skipLine() {
	end := bytes.IndexByte(lc.body[lc.off:], '\n')
	if end < 0 {
		lc.off = len(lc.body)
	} else {
		lc.off += end + 1
	}
	lc.line++
}
