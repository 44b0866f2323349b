// Package docscheck holds tests that keep docs/ true: docs/CHATS.md has a
// row for every rule of CHATS-RULES.md and every test it names exists, and
// docs/ARCHITECTURE.md's package table (one row per package, its floor, its
// imports) matches what `go list` says the packages import.
package docscheck
