package localendpoint

import (
	"os"
	"path"
	"runtime"
	"strings"
)

// Products are the user-data folder names (product.json's nameShort) of the
// VS Code builds whose agent host reads the registry: Stable, Insiders,
// Exploration, a build from source, and VSCodium's two (built from the same
// sources). Only those whose folder exists get an entry.
var Products = []string{"Code", "Code - Insiders", "Code - Exploration", "Code - OSS", "VSCodium", "VSCodium - Insiders"}

// Env is what the user-data directories depend on, read once from the
// process (ProcessEnv) so the rules below stay pure.
type Env struct {
	// OS is runtime.GOOS: "windows", "darwin", anything else is Linux's rule.
	OS   string
	Home string
	// XDGConfigHome, AppData and UserProfile are $XDG_CONFIG_HOME,
	// %APPDATA% and %USERPROFILE%.
	XDGConfigHome, AppData, UserProfile string
	// Portable is $VSCODE_PORTABLE (a portable install's data folder, set in
	// the terminals of such an install); VSCodeAppData is $VSCODE_APPDATA,
	// which replaces the platform's base folder for every build.
	Portable, VSCodeAppData string
}

// ProcessEnv reads Env from this process.
func ProcessEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{
		OS:            runtime.GOOS,
		Home:          home,
		XDGConfigHome: os.Getenv("XDG_CONFIG_HOME"),
		AppData:       os.Getenv("APPDATA"),
		UserProfile:   os.Getenv("USERPROFILE"),
		Portable:      os.Getenv("VSCODE_PORTABLE"),
		VSCodeAppData: os.Getenv("VSCODE_APPDATA"),
	}
}

// UserDataDirs are the candidate VS Code user-data directories of this
// user, following VS Code's own resolver (src/vs/platform/environment/node/
// userDataPath.ts, mirrored by cli/src/tunnels/user_data_path.rs):
// $VSCODE_PORTABLE/user-data when set; then, for each of Products, the
// product's folder under $VSCODE_APPDATA when set, else under the platform's
// base: %APPDATA% (else %USERPROFILE%\AppData\Roaming) on Windows,
// ~/Library/Application Support on macOS, $XDG_CONFIG_HOME (else ~/.config)
// elsewhere. A relative or empty base gives nothing: a guess would write
// somewhere unknown. A window started with --user-data-dir is not found
// this way; name its folder with --vscode-user-data.
func UserDataDirs(env Env) []string {
	var out []string
	if abs(env.OS, env.Portable) {
		out = append(out, join(env.OS, env.Portable, "user-data"))
	}
	base := ""
	switch {
	case env.VSCodeAppData != "":
		base = env.VSCodeAppData
	case env.OS == "windows" && env.AppData != "":
		base = env.AppData
	case env.OS == "windows" && env.UserProfile != "":
		base = join(env.OS, env.UserProfile, "AppData", "Roaming")
	case env.OS == "windows":
		// Neither variable: no base (and never Linux's rule below).
	case env.OS == "darwin" && env.Home != "":
		base = join(env.OS, env.Home, "Library", "Application Support")
	case env.OS != "darwin" && env.XDGConfigHome != "":
		base = env.XDGConfigHome
	case env.OS != "darwin" && env.Home != "":
		base = join(env.OS, env.Home, ".config")
	}
	if !abs(env.OS, base) {
		return out
	}
	for _, p := range Products {
		out = append(out, join(env.OS, base, p))
	}
	return out
}

// abs reports whether p is absolute under os's rules (not the host's, so
// the table test covers every platform on any machine).
func abs(os, p string) bool {
	if os != "windows" {
		return strings.HasPrefix(p, "/")
	}
	drive := len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		(p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
	return drive || strings.HasPrefix(p, `\\`)
}

// join joins path elements with os's separator.
func join(os string, elem ...string) string {
	if os != "windows" {
		return path.Join(elem...)
	}
	out := strings.TrimRight(elem[0], `\/`)
	for _, e := range elem[1:] {
		out += `\` + e
	}
	return out
}
