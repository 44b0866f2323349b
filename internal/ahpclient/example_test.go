package ahpclient_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ahpd/ahpd/internal/ahpclient"
)

// A script that asks the script agent a question and prints the answer as
// it streams, the way `ahpd send --new script` does.
func Example() {
	ctx := context.Background()
	c, err := ahpclient.Dial(ctx, os.Getenv("AHPD_URL"), os.Getenv("AHPD_TOKEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer c.Close()
	_, chat, err := c.CreateSession(ctx, "script", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	res, err := c.Send(ctx, chat, "hello", ahpclient.SendOptions{
		OnText: func(s string) { fmt.Print(s) },
	})
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
	case res.Ending == ahpclient.EndError:
		fmt.Fprintln(os.Stderr, "turn failed:", res.Error)
	default:
		fmt.Println()
	}
}
