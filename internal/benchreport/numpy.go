package benchreport

import "math"

// numpy's arithmetic, reproduced so that report's numbers equal the ones
// `vllm bench serve` prints bit for bit, not just to the printed digits.

// pairwiseBlock is numpy's PW_BLOCKSIZE.
const pairwiseBlock = 128

// npBuffer is numpy's default iterator buffer size: a reduction hands the
// inner loop at most this many elements at a time.
const npBuffer = 8192

// npSum is numpy's sum of a float64 array (np.add.reduce): the array is
// taken in chunks of npBuffer elements, each summed pairwise, and the chunk
// sums are added in order to the identity 0.
func npSum(a []float64) float64 {
	s := 0.0
	for len(a) > 0 {
		n := min(len(a), npBuffer)
		s += pairwiseSum(a[:n])
		a = a[n:]
	}
	return s
}

// pairwiseSum is numpy's pairwise_sum: sequential below 8 elements, eight
// accumulators up to 128, halves (cut at a multiple of 8) above.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		s := 0.0 // numpy starts from -0.0; the sums differ only in the sign of zero
		for _, v := range a {
			s += v
		}
		return s
	case n <= pairwiseBlock:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		s := (r[0] + r[1]) + (r[2] + r[3]) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// npMean is np.mean: the pairwise sum divided by the count.
func npMean(a []float64) float64 {
	return npSum(a) / float64(len(a))
}

// npStd is np.std with ddof 0: the square root of the mean squared
// deviation from np.mean, summed the same way.
func npStd(a []float64) float64 {
	m := npMean(a)
	d := make([]float64, len(a))
	for i, v := range a {
		d[i] = (v - m) * (v - m)
	}
	return math.Sqrt(npSum(d) / float64(len(a)))
}

// npPercentile is np.percentile(a, p) with the default "linear" method on
// sorted samples: index h = (n−1)·(p/100), and numpy's lerp, which for a
// fraction t >= 0.5 computes b − (b − a)(1 − t) so as to be exact at b.
func npPercentile(p float64, sorted []float64) float64 {
	n := len(sorted)
	if n == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	h := float64(n-1) * (p / 100)
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	t := h - lo
	a, b := sorted[i], sorted[i+1]
	diff := b - a
	if t >= 0.5 {
		return b - diff*(1-t)
	}
	return a + diff*t
}

// npMedian is np.median of sorted samples: the middle one, or the mean of
// the two middle ones (their sum halved, as np.mean computes it), which can
// differ in the last bit from the 50th percentile.
func npMedian(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return npMean(sorted[n/2-1 : n/2+1])
}
