package main

import (
	"fmt"
	"strings"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
)

// sandboxCheck reports the kernel's Landlock ABI and which sandbox
// modes can run here; it fails only when the configured default cannot
// (every session taking it would be refused).
func sandboxCheck(cfg daemon.Config) check {
	network, err := sandbox.ParseNetwork(cfg.Sandbox.Network)
	if err != nil {
		return check{Name: "sandbox", Detail: err.Error(), Fix: "set sandbox.network to open or models"}
	}
	site := sandbox.NewSite(sandbox.Site{Network: network})
	abi, missing := site.ABI()
	var can, cannot []string
	for _, m := range sandbox.Modes {
		if ok, why := site.Available(m); ok {
			can = append(can, string(m))
		} else {
			cannot = append(cannot, fmt.Sprintf("%s (%s)", m, why))
		}
	}
	detail := fmt.Sprintf("Landlock ABI %d; modes that run here: %s", abi, strings.Join(can, ", "))
	if abi == 0 && missing != "" {
		detail = "no Landlock (" + missing + "); modes that run here: " + strings.Join(can, ", ")
	}
	if len(cannot) > 0 {
		detail += "; unavailable: " + strings.Join(cannot, ", ")
	}
	mode, err := sandbox.ParseMode(cfg.Sandbox.Default)
	if err != nil {
		return check{Name: "sandbox", Detail: err.Error(), Fix: "set sandbox.default to off, workspace or strict"}
	}
	detail += "; default " + string(mode)
	if network == sandbox.NetworkModels {
		detail += ", network models (TCP to the model endpoints' ports only)"
	}
	if ok, why := site.Available(mode); !ok {
		return check{Name: "sandbox", Detail: detail, Fix: "sandbox.default " + string(mode) + " cannot run here (" + why + "): use a kernel with Landlock (ABI 3 or later, 4 for network models; lsm= including landlock), or set sandbox.default to off (or sandbox.network to open)"}
	}
	return check{Name: "sandbox", OK: true, Detail: detail}
}
