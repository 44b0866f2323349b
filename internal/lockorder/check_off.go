//go:build !lockcheck

package lockorder

const enabled = false

func acquire(Rank) {}
func release(Rank) {}
