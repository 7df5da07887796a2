package history

// walk splits the window (i0, i1] into per-segment pieces and folds the
// gauge maxima of every point after i0 (walkWith, merging nothing).
func (sr *series) walk(i0, i1 int) ([]piece, [numGauges]float64) {
	w := sr.walkWith(i0, i1, mergeNone)
	return w.pieces, w.maxes
}
