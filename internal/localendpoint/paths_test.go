package localendpoint

import (
	"slices"
	"testing"
)

// The user-data folders follow VS Code's resolver on every platform.
func TestUserDataDirsPerPlatform(t *testing.T) {
	each := func(sep, base string) []string {
		var out []string
		for _, p := range Products {
			out = append(out, base+sep+p)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		env  Env
		want []string
	}{
		{"linux default", Env{OS: "linux", Home: "/home/u"}, each("/", "/home/u/.config")},
		{"linux XDG_CONFIG_HOME", Env{OS: "linux", Home: "/home/u", XDGConfigHome: "/home/u/custom config"}, each("/", "/home/u/custom config")},
		{"linux relative XDG_CONFIG_HOME gives nothing", Env{OS: "linux", Home: "/home/u", XDGConfigHome: "cfg"}, nil},
		{"macOS", Env{OS: "darwin", Home: "/Users/u", XDGConfigHome: "/ignored"}, each("/", "/Users/u/Library/Application Support")},
		{"windows APPDATA", Env{OS: "windows", AppData: `C:\Users\u\AppData\Roaming`, XDGConfigHome: "/ignored"}, each(`\`, `C:\Users\u\AppData\Roaming`)},
		{"windows USERPROFILE", Env{OS: "windows", UserProfile: `C:\Users\u`}, each(`\`, `C:\Users\u\AppData\Roaming`)},
		{"windows nothing set", Env{OS: "windows", Home: `C:\Users\u`}, nil},
		{"VSCODE_APPDATA replaces the base", Env{OS: "linux", Home: "/home/u", VSCodeAppData: "/mnt/appdata"}, each("/", "/mnt/appdata")},
		{"VSCODE_PORTABLE comes first", Env{OS: "linux", Home: "/home/u", Portable: "/mnt/portable"},
			append([]string{"/mnt/portable/user-data"}, each("/", "/home/u/.config")...)},
		{"relative VSCODE_PORTABLE is ignored", Env{OS: "linux", Home: "/home/u", Portable: "portable"}, each("/", "/home/u/.config")},
		{"no home", Env{OS: "linux"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UserDataDirs(tc.env); !slices.Equal(got, tc.want) {
				t.Errorf("UserDataDirs = %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The stable and Insiders folders are the ones VS Code names Code and
// Code - Insiders.
func TestProductsIncludeStableAndInsiders(t *testing.T) {
	for _, p := range []string{"Code", "Code - Insiders"} {
		if !slices.Contains(Products, p) {
			t.Errorf("Products lacks %q", p)
		}
	}
}
