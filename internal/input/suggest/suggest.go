// Package suggest finds the word a misspelt name was likely meant to be, for
// the "did you mean" of error messages (a flag, a config knob, a YAML field).
package suggest

import "strings"

// maxLen bounds the names Distance compares: a longer one is as far from
// everything as it can be, so hostile input costs no more than this.
const maxLen = 64

// Distance is the Levenshtein distance of a and b in bytes, or maxLen when
// either is longer than maxLen.
func Distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return maxLen
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Nearest returns the word of known closest to name, ignoring case, within
// two edits and fewer edits than half name's length (so a short name is not
// taken for any short word); a tie goes to the earlier word; "" when none is
// that close.
func Nearest(name string, known []string) string {
	best, bestD := "", 3
	lower := strings.ToLower(name)
	for _, k := range known {
		if d := Distance(lower, strings.ToLower(k)); d < bestD && 2*d < len(name) {
			best, bestD = k, d
		}
	}
	return best
}
