// Command actiongen writes internal/ahp/actions_gen.go from
// internal/ahp/actions.table. It runs in internal/ahp (go generate).
package main

import (
	"fmt"
	"os"

	"github.com/ahpd/ahpd/internal/ahp/internal/actiongen"
)

func main() {
	table, err := os.ReadFile("actions.table")
	if err == nil {
		var rows []actiongen.Row
		if rows, err = actiongen.Parse(table); err == nil {
			var src []byte
			if src, err = actiongen.Generate(rows); err == nil {
				err = os.WriteFile("actions_gen.go", src, 0o644)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "actiongen:", err)
		os.Exit(1)
	}
}
