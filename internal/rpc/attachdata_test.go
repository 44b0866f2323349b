package rpc

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// scanFrame runs the frame scanner over frame, fed in pieces of step
// bytes, and returns the frame it puts together.
func scanFrame(frame []byte, step int) (*frameScanner, []byte) {
	s := &frameScanner{}
	for len(frame) > 0 {
		n := min(step, len(frame))
		s.scan(frame[:n])
		frame = frame[n:]
	}
	return s, s.finish()
}

// spliced is the frame the scanner read: out with every string it kept
// out put back.
func spliced(s *frameScanner, out []byte) []byte {
	var b []byte
	last := 0
	for _, sp := range s.spills {
		b = append(b, out[last:sp.at]...)
		b = sp.str.appendRange(b, 0, sp.str.size)
		last = sp.at
	}
	return append(b, out[last:]...)
}

func dispatchFrame(attachments string) string {
	return `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-chat:/c","clientSeq":1,` +
		`"action":{"type":"chat/turnStarted","turnId":"t1","message":{"text":"hi","origin":{"kind":"user"},"attachments":` +
		attachments + `}}}}`
}

// TestAttachmentDataIsReadOutOfTheFrame: the data of a dispatched
// message's inline attachments is kept out of the frame, which carries ""
// in its place, whatever pieces the frame arrives in; each is read back,
// escapes undone, as encoding/json reads it.
func TestAttachmentDataIsReadOutOfTheFrame(t *testing.T) {
	big := strings.Repeat("QUJD", 50_000) // 200 KB, over several chunks
	frame := dispatchFrame(`[{"type":"embeddedResource","label":"a","data":"` + big + `"},` +
		`{"type":"simple","label":"b"},` +
		`{"type":"embeddedResource","data":"QU\/JD\u0041\n\ud83d\ude00\ud800x","label":"c"}]`)
	want := dispatchFrame(`[{"type":"embeddedResource","label":"a","data":""},` +
		`{"type":"simple","label":"b"},` +
		`{"type":"embeddedResource","data":"","label":"c"}]`)
	var sent struct {
		Params struct {
			Action struct {
				Message struct {
					Attachments []struct {
						Data string `json:"data"`
					} `json:"attachments"`
				} `json:"message"`
			} `json:"action"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(frame), &sent); err != nil {
		t.Fatal(err)
	}
	values := sent.Params.Action.Message.Attachments
	for _, step := range []int{1, 7, 4096, len(frame)} {
		out, data, err := readFrame(iotest.OneByteReader(strings.NewReader(frame)), make([]byte, step))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != want {
			t.Fatalf("step %d: frame read as\n%s\nwant\n%s", step, out, want)
		}
		if len(data) != 2 || data[0] == nil || data[2] == nil {
			t.Fatalf("step %d: attachment data %v", step, data)
		}
		for _, i := range []int{0, 2} {
			if got := data[i].String(); got != values[i].Data {
				t.Errorf("step %d: attachment %d String() = %q, want %q", step, i, trim(got), trim(values[i].Data))
			}
			streamed, err := io.ReadAll(iotest.OneByteReader(data[i].Reader()))
			if err != nil || string(streamed) != values[i].Data {
				t.Errorf("step %d: attachment %d Reader() = %q, %v; want %q", step, i, trim(string(streamed)), err, trim(values[i].Data))
			}
		}
		if data[0].Len() != len(big) {
			t.Errorf("Len() = %d, want %d", data[0].Len(), len(big))
		}
	}
	// Held in chunks that never grew by copying: the waste is under one chunk.
	s, _ := scanFrame([]byte(frame), 1<<20)
	var held int
	for _, c := range s.data[0].chunks {
		held += len(c)
	}
	if held-len(big) > maxChunk {
		t.Errorf("%d bytes held for a %d-byte string", held, len(big))
	}
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// TestAmbiguousFramesAreReadAsSent: what the scanner cannot read
// unambiguously is left in the frame exactly as it came: a frame that is
// not JSON, a path member named twice or in another case, a bad escape or a
// control character in the data, and data where the path does not lead.
func TestAmbiguousFramesAreReadAsSent(t *testing.T) {
	for name, frame := range map[string]string{
		"Data in another case":      dispatchFrame(`[{"type":"embeddedResource","data":"QQ==","Data":"Qg=="}]`),
		"data named twice":          dispatchFrame(`[{"type":"embeddedResource","data":"QQ==","data":"Qg=="}]`),
		"data escaped, twice":       dispatchFrame(`[{"type":"embeddedResource","data":"QQ==","\u0064ata":"Qg=="}]`),
		"Message in another case":   strings.Replace(dispatchFrame(`[{"data":"QQ=="}]`), `"message"`, `"Meſſage"`, 1),
		"attachments named twice":   strings.Replace(dispatchFrame(`[{"data":"QQ=="}]`), `"attachments"`, `"attachments":[{"data":"QQ=="}],"attachments"`, 1),
		"a bad escape":              dispatchFrame(`[{"type":"embeddedResource","data":"QQ\x=="}]`),
		"a bad \\u":                 dispatchFrame(`[{"type":"embeddedResource","data":"QQ\u00g1"}]`),
		"a control character":       dispatchFrame("[{\"type\":\"embeddedResource\",\"data\":\"QQ\n==\"}]"),
		"cut short":                 strings.TrimSuffix(dispatchFrame(`[{"data":"QQ=="}]`), "}}}}"),
		"cut inside the data":       dispatchFrame(`[{"data":"QQ==`),
		"trailing garbage":          dispatchFrame(`[{"data":"QQ=="}]`) + "x",
		"a trailing comma":          dispatchFrame(`[{"data":"QQ=="},]`),
		"attachments as an object":  dispatchFrame(`{"0":{"data":"QQ=="}}`),
		"data as a number":          dispatchFrame(`[{"data":12}]`),
		"data as an object":         dispatchFrame(`[{"data":{"data":"QQ=="}}]`),
		"a batch":                   "[" + dispatchFrame(`[{"data":"QQ=="}]`) + "]",
		"not JSON":                  "\xff" + dispatchFrame(`[{"data":"QQ=="}]`),
		"data at another path":      `{"jsonrpc":"2.0","method":"x","params":{"channel":"c","data":"QQ=="}}`,
		"a string before the value": `"x"` + dispatchFrame(`[{"data":"QQ=="}]`),
		"a NUL":                     dispatchFrame("[{\"data\":\"QQ\x00==\"}]"),
	} {
		t.Run(name, func(t *testing.T) {
			out, data, err := readFrame(strings.NewReader(frame), make([]byte, 3))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != frame || data != nil {
				t.Errorf("read as %s with %d strings kept out; want it as sent", out, len(data))
			}
		})
	}
}

// TestAttachmentDataReachesTheHandler: over a real websocket, a
// notification's handler gets the attachments' data beside params, which
// carry "" in its place; a request's data goes nowhere.
func TestAttachmentDataReachesTheHandler(t *testing.T) {
	h := newTestHandler()
	_, url := startServer(t, h, nil)
	cl := dial(t, url, nil)
	frame := dispatchFrame(`[{"type":"embeddedResource","data":"aGVsbG8="}]`)
	// A request carrying the same path: its data goes nowhere.
	cl.send(strings.Replace(strings.Replace(frame, "dispatchAction", "attach", 1), `"method"`, `"id":1,"method"`, 1))
	cl.send(strings.Replace(frame, "dispatchAction", "attach", 1))
	got := <-h.attachments
	if bytes.Contains(got.params, []byte("aGVsbG8=")) || !bytes.Contains(got.params, []byte(`"data":""`)) {
		t.Errorf("params %s", got.params)
	}
	if len(got.data) != 1 || got.data[0].String() != "aGVsbG8=" {
		t.Errorf("attachment data %v", got.data)
	}
	// The next notification carries none.
	cl.send(`{"jsonrpc":"2.0","method":"attach","params":{}}`)
	if got := <-h.attachments; got.data != nil {
		t.Errorf("a notification without attachments got %v", got.data)
	}
}

// FuzzReadFrame: for any frame, the scanner's output with the strings it
// kept out put back is the frame as read; and for a frame that is JSON,
// the output read as JSON with each kept string put back at its path is the
// frame's value, and each string's Reader gives what its String does.
func FuzzReadFrame(f *testing.F) {
	for _, seed := range []string{
		dispatchFrame(`[{"type":"embeddedResource","data":"QQ=="},{"data":"\u0041\/"}]`),
		dispatchFrame(`[{"data":"x","Data":"y"}]`),
		dispatchFrame(`[[],{"data":"\ud83d\ude00"},{"data":1}]`),
		`{"params":{"action":{"message":{"attachments":[{"data":""}]}}}}`,
		`{"params":{"action":{"message":{"attachments":[{"data":"a\"b"}]}}}} `,
		`[1,2]`, `"x"`, `12`, `{`, "\xff", ``, ` {} `,
	} {
		f.Add([]byte(seed), 3)
	}
	f.Fuzz(func(t *testing.T, frame []byte, step int) {
		if step < 1 {
			step = 1
		}
		s, out := scanFrame(frame, step)
		if got := spliced(s, out); !bytes.Equal(got, frame) {
			t.Fatalf("spliced back: %q\nread: %q", got, frame)
		}
		if len(out) != cap(out) {
			t.Fatalf("a frame of %d bytes in %d", len(out), cap(out))
		}
		if !json.Valid(frame) {
			if len(s.spills) > 0 && json.Valid(out) {
				t.Fatalf("a frame that is not JSON became JSON: %q", out)
			}
			return
		}
		var want, got any
		_ = json.Unmarshal(frame, &want)
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("out is not JSON: %q: %v", out, err)
		}
		for i, str := range s.data {
			v := str.String()
			streamed, _ := io.ReadAll(str.Reader())
			if utf8.Valid(str.raw()) && string(streamed) != v {
				t.Fatalf("Reader %q, String %q", streamed, v)
			}
			a := got.(map[string]any)["params"].(map[string]any)["action"].(map[string]any)["message"].(map[string]any)["attachments"].([]any)[i].(map[string]any)
			if a["data"] != "" {
				t.Fatalf("attachment %d data left in the frame: %q", i, a["data"])
			}
			a["data"] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("read as %v, want %v", got, want)
		}
	})
}

// The cost of reading a frame through readFrame, against reading it whole
// as gorilla's ReadMessage does (io.ReadAll): a typical small frame, and a
// 1 MiB frame with nothing kept out (a resourceWrite's content).
var (
	smallFrame = []byte(dispatchFrame(`[{"type":"simple","label":"note","modelRepresentation":"a note"}]`))
	largeFrame = []byte(`{"jsonrpc":"2.0","id":7,"method":"resourceWrite","params":{"channel":"ahp-root://","uri":"file:///x","data":"` +
		strings.Repeat("QUJD", 1<<18) + `","encoding":"base64"}}`)
)

func benchmarkRead(b *testing.B, frame []byte, read func(io.Reader) error) {
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	r := bytes.NewReader(frame)
	for b.Loop() {
		r.Reset(frame)
		if err := read(r); err != nil {
			b.Fatal(err)
		}
	}
}

func readFrameOnce(buf []byte) func(io.Reader) error {
	return func(r io.Reader) error { _, _, err := readFrame(r, buf); return err }
}

func readAll(r io.Reader) error { _, err := io.ReadAll(r); return err }

func BenchmarkReadFrameSmall(b *testing.B) {
	benchmarkRead(b, smallFrame, readFrameOnce(make([]byte, readChunk)))
}
func BenchmarkReadAllSmall(b *testing.B) { benchmarkRead(b, smallFrame, readAll) }
func BenchmarkReadFrameLarge(b *testing.B) {
	benchmarkRead(b, largeFrame, readFrameOnce(make([]byte, readChunk)))
}
func BenchmarkReadAllLarge(b *testing.B) { benchmarkRead(b, largeFrame, readAll) }
