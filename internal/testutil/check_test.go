package testutil

import "testing"

func TestRequireCheck(t *testing.T) {
	for _, c := range []struct {
		env string
		run bool
	}{{"", false}, {"0", false}, {"1", true}} {
		t.Setenv(CheckEnv, c.env)
		if Check() != c.run {
			t.Errorf("%s=%q: Check() = %v", CheckEnv, c.env, !c.run)
		}
		ran := false
		t.Run("env="+c.env, func(t *testing.T) {
			RequireCheck(t, "test")
			ran = true
		})
		if ran != c.run {
			t.Errorf("%s=%q: the test ran: %v, want %v", CheckEnv, c.env, ran, c.run)
		}
	}
}
