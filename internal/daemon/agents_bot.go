package daemon

import (
	"path/filepath"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/bot"
)

// botAgents offers the bot backend: a chat whose agent is "bot" hands its
// turns to the bot's work session. Its bots live in the store and their
// folders, by default, under <data dir>/bots; the host binds it once built
// (Host.BindBots).
func botAgents(cfg Config) ([]agent.Agent, error) {
	return []agent.Agent{bot.New(bot.Options{Dir: botsDir(cfg)})}, nil
}

// botsDir is where bots' folders are made unless a bot names its own.
func botsDir(cfg Config) string { return filepath.Join(cfg.DataDir, "bots") }
