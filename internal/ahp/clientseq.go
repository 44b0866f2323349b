package ahp

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// MaxClientSeq is the largest clientSeq taken: the largest integer a
// JavaScript client (VS Code) holds exactly, 2^53-1.
const MaxClientSeq = 1<<53 - 1

// ParseClientSeq reads dispatchAction's clientSeq: a whole JSON number from
// 0 to MaxClientSeq. Anything else (1.5, 2^64, "abc", missing) is an error
// naming the field, for the refusal envelope.
func ParseClientSeq(raw json.RawMessage) (int64, error) {
	s := string(raw)
	if len(raw) == 0 || s == "null" {
		return 0, fmt.Errorf("params.clientSeq: required")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > MaxClientSeq || s != strconv.FormatInt(n, 10) {
		return 0, fmt.Errorf("params.clientSeq: must be a whole number from 0 to %d, not %s", int64(MaxClientSeq), clip(s, 40))
	}
	return n, nil
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
