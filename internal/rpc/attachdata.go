package rpc

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// A message's inline attachments are the one place AHP puts bulk bytes in a
// client's frame: chat/turnStarted and chat/pendingMessageSet carry each
// attachment's bytes as a base64 string at
// params.action.message.attachments[i].data (a 10 MiB file is a 13.3 MiB
// string). Read whole, then decoded by jsonrpc2 and again by the host, it
// was held over and over: the heap grew by 9× the attachment during its
// turn (issue 34, item 7; docs/PERFORMANCE.md). So the read loop reads
// a text frame through readFrame, which copies the frame except the contents
// of those strings: each is kept, still escaped, in chunks of its own (an
// AttachmentData entry), and the frame keeps an empty string in its place.
// The host decodes each straight into its attachment's file
// (internal/host/attachments.go, writeInline), so the bytes are held once,
// as the string the client sent, and only until they are written.
//
// Anything readFrame cannot read unambiguously it leaves in the frame as it
// came: a frame that is not valid JSON, a member on that path named twice or
// named like a path member in another case ("Data"; encoding/json would
// take either), a string it would keep out with an escape or a character
// JSON does not allow there. The frame is then exactly the bytes read, and
// is answered or decoded as before.

// attachmentDataPath is the path of the strings readFrame keeps out of the
// frame; "*" is any index of an array.
var attachmentDataPath = [...]string{"params", "action", "message", "attachments", "*", "data"}

// attachmentDataPathBytes is attachmentDataPath as bytes, to compare
// member names with without a copy.
var attachmentDataPathBytes = func() (b [len(attachmentDataPath)][]byte) {
	for i, name := range attachmentDataPath {
		b[i] = []byte(name)
	}
	return b
}()

// AttachmentData is the data of a dispatched message's inline attachments
// (params.action.message.attachments[i].data), read out of the frame: the
// attachment's index in the message → its string. The frame carries "" in
// each one's place.
type AttachmentData map[int]*JSONString

// JSONString is a JSON string value kept out of its frame: its contents as
// sent, escapes and all, in chunks. It is never changed once the frame is
// read, and is safe to read from any goroutine.
type JSONString struct {
	// chunks are full but the last, which holds fill bytes. Bytes are
	// written into a chunk by index, never by storing a grown slice: the
	// scanner writes byte by byte, and each store of a slice is a GC write
	// barrier.
	chunks [][]byte
	fill   int
	size   int
}

// Chunks of a JSONString: the first is small, each next one twice the last,
// up to maxChunk, so a short string wastes little and a long one is held in
// chunks that are never copied to grow.
const (
	firstChunk = 512
	maxChunk   = 64 << 10
)

// write appends p to s.
func (s *JSONString) write(p []byte) {
	for len(p) > 0 {
		n := len(s.chunks)
		if n == 0 || s.fill == len(s.chunks[n-1]) {
			size := firstChunk
			if n > 0 {
				size = min(2*len(s.chunks[n-1]), maxChunk)
			}
			s.chunks = append(s.chunks, make([]byte, size))
			s.fill = 0
			n++
		}
		k := copy(s.chunks[n-1][s.fill:], p)
		s.fill += k
		s.size += k
		p = p[k:]
	}
}

// writeByte appends c to s.
func (s *JSONString) writeByte(c byte) {
	if n := len(s.chunks); n > 0 && s.fill < len(s.chunks[n-1]) {
		s.chunks[n-1][s.fill] = c
		s.fill++
		s.size++
		return
	}
	one := [1]byte{c}
	s.write(one[:])
}

// chunk is the i-th chunk's bytes.
func (s *JSONString) chunk(i int) []byte {
	if i == len(s.chunks)-1 {
		return s.chunks[i][:s.fill]
	}
	return s.chunks[i]
}

// appendRange appends bytes from..to of s to dst.
func (s *JSONString) appendRange(dst []byte, from, to int) []byte {
	at := 0
	for i := range s.chunks {
		if at >= to {
			break
		}
		c := s.chunk(i)
		lo, hi := max(from-at, 0), min(to-at, len(c))
		if lo < hi {
			dst = append(dst, c[lo:hi]...)
		}
		at += len(c)
	}
	return dst
}

// Len is the length of the string as sent, escapes included.
func (s *JSONString) Len() int { return s.size }

// raw returns the string as sent, escapes included, in one slice.
func (s *JSONString) raw() []byte {
	b := make([]byte, 0, s.size+2)
	b = append(b, '"')
	b = s.appendRange(b, 0, s.size)
	return append(b, '"')
}

// String is the string's value exactly as encoding/json reads it. It holds
// the whole value at once: Reader is the way to stream it.
func (s *JSONString) String() string {
	var v string
	// readFrame checked every escape, so this cannot fail.
	_ = json.Unmarshal(s.raw(), &v)
	return v
}

// Reader streams the string's value: its escapes undone, one chunk at a
// time. Bytes that are not UTF-8 are passed on as they are (encoding/json
// would make each a U+FFFD), which changes nothing for the base64 an
// attachment's data is.
func (s *JSONString) Reader() io.Reader { return &unescaper{s: s} }

// unescaper is the Reader of a JSONString.
type unescaper struct {
	s       *JSONString
	ci, off int
	// pending is what an escape decoded to that Read could not yet return.
	pending []byte
	buf     [8]byte
}

func (u *unescaper) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(u.pending) > 0 {
			k := copy(p[n:], u.pending)
			u.pending = u.pending[k:]
			n += k
			continue
		}
		if u.ci == len(u.s.chunks) {
			break
		}
		c := u.s.chunk(u.ci)[u.off:]
		if len(c) == 0 {
			u.ci, u.off = u.ci+1, 0
			continue
		}
		if c[0] != '\\' {
			run := c
			if i := bytes.IndexByte(c, '\\'); i >= 0 {
				run = c[:i]
			}
			k := copy(p[n:], run)
			u.off += k
			n += k
			continue
		}
		u.pending = u.escape()
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// next takes the next byte of the string; 0 at its end.
func (u *unescaper) next() byte {
	for u.ci < len(u.s.chunks) {
		c := u.s.chunk(u.ci)
		if u.off < len(c) {
			b := c[u.off]
			u.off++
			return b
		}
		u.ci, u.off = u.ci+1, 0
	}
	return 0
}

// peek returns the next k bytes without taking them (fewer at the end).
func (u *unescaper) peek(k int) []byte {
	out := make([]byte, 0, k)
	ci, off := u.ci, u.off
	for len(out) < k && ci < len(u.s.chunks) {
		c := u.s.chunk(ci)[off:]
		take := min(k-len(out), len(c))
		out = append(out, c[:take]...)
		ci, off = ci+1, 0
	}
	return out
}

// escape takes one escape (the backslash is next) and returns what it
// stands for, as encoding/json decodes it: a lone surrogate is U+FFFD.
func (u *unescaper) escape() []byte {
	u.next() // '\\'
	switch b := u.next(); b {
	case 'b':
		return append(u.buf[:0], '\b')
	case 'f':
		return append(u.buf[:0], '\f')
	case 'n':
		return append(u.buf[:0], '\n')
	case 'r':
		return append(u.buf[:0], '\r')
	case 't':
		return append(u.buf[:0], '\t')
	case 'u':
		r := u.hex4()
		if utf16.IsSurrogate(r) {
			pair := utf8.RuneError
			if ahead := u.peek(6); len(ahead) == 6 && ahead[0] == '\\' && ahead[1] == 'u' {
				if low, ok := hexRune(ahead[2:]); ok {
					pair = utf16.DecodeRune(r, low)
				}
			}
			if pair != utf8.RuneError {
				u.next()
				u.next()
				u.hex4()
			}
			r = pair
		}
		return utf8.AppendRune(u.buf[:0], r)
	default: // '"', '\\', '/'
		return append(u.buf[:0], b)
	}
}

// hex4 takes the four hex digits of a \u escape.
func (u *unescaper) hex4() rune {
	var h [4]byte
	for i := range h {
		h[i] = u.next()
	}
	r, _ := hexRune(h[:])
	return r
}

// hexRune reads four hex digits.
func hexRune(h []byte) (rune, bool) {
	var r rune
	for _, c := range h[:4] {
		v, ok := hexValue(c)
		if !ok {
			return 0, false
		}
		r = r*16 + rune(v)
	}
	return r, true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// readFrame reads one text message from r through buf: the frame with the
// contents of its inline attachments' data left out, and those contents.
func readFrame(r io.Reader, buf []byte) ([]byte, AttachmentData, error) {
	s := &frameScanner{}
	s.stack, s.key = s.stackRoom[:0], s.keyRoom[:0]
	for {
		n, err := r.Read(buf)
		s.scan(buf[:n])
		if err == io.EOF {
			return s.finish(), s.data, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
}

// scanState is where frameScanner is in the JSON text.
type scanState uint8

const (
	stValue       scanState = iota // before a value
	stArrayFirst                   // after '[': a value or ']'
	stObjectFirst                  // after '{': a key or '}'
	stKey                          // after ',' in an object: a key
	stColon                        // after a key: ':'
	stAfterValue                   // after a value: ',', a closing bracket, or the end
	stString                       // inside a string value
	stKeyString                    // inside a member name
	stLiteral                      // inside a number, true, false or null
	stEnd                          // after the frame's value: white space only
)

// container is an object or array frameScanner is inside.
type container struct {
	object bool
	// depth is how many segments of attachmentDataPath lead here; -1 when
	// this container is off the path.
	depth int
	// elements is how many values an array has begun.
	elements int
	// seen: the object's path member was named; match: the member being
	// read is it.
	seen, match bool
	// attachment is the index of the attachment this container is, or is
	// inside of.
	attachment int
}

// spilled is one string kept out of the frame, and where it was.
type spilled struct {
	at  int // offset in out, between the string's quotes
	str *JSONString
}

// frameScanner is a JSON scanner over a frame as it is read, just precise
// enough to follow attachmentDataPath; json.Valid judges the frame after
// it.
type frameScanner struct {
	// out is the frame as read, but the strings kept out, in chunks: the
	// frame is copied into one slice of its exact size once read, as
	// io.ReadAll does.
	out      JSONString
	data     AttachmentData
	spills   []spilled
	verbatim bool // gave up following the path: out is the frame as read

	state scanState
	stack []container
	// stackRoom holds the first levels of stack, which are all a frame on
	// the path needs.
	stackRoom [8]container
	keyRoom   [32]byte
	// esc is where a string's escape is: 0 outside one, 1 after the
	// backslash, 2..5 before the 4th..1st hex digit of \u.
	esc int
	// spill is the string being kept out of the frame, nil when the string
	// goes to out.
	spill *JSONString
	// key collects a member name when it may be a path member.
	key        []byte
	keyCollect bool
	keyLong    bool
}

// maxKey bounds a collected member name: one longer cannot name a path
// member, even spelled with escapes or case-folding runes.
const maxKey = 256

func (s *frameScanner) scan(p []byte) {
	for len(p) > 0 {
		if s.verbatim {
			s.out.write(p)
			return
		}
		switch s.state {
		case stString, stKeyString:
			p = s.stringBytes(p)
		case stLiteral:
			i := 0
			for i < len(p) && !endsLiteral(p[i]) {
				i++
			}
			s.emit(p[:i])
			p = p[i:]
			if len(p) > 0 {
				s.afterValue()
			}
		default:
			s.structural(p[0])
			p = p[1:]
		}
	}
}

func endsLiteral(c byte) bool {
	return c == ',' || c == ']' || c == '}' || isSpace(c)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// structural takes one byte outside strings and literals.
func (s *frameScanner) structural(c byte) {
	if isSpace(c) {
		s.out.writeByte(c)
		return
	}
	switch s.state {
	case stValue, stArrayFirst:
		if s.state == stArrayFirst && c == ']' {
			s.out.writeByte(c)
			s.close()
			return
		}
		s.value(c)
	case stObjectFirst, stKey:
		switch {
		case c == '"':
			s.out.writeByte(c)
			s.keyCollect = s.stack[len(s.stack)-1].depth >= 0
			s.key, s.keyLong = s.key[:0], false
			s.state, s.esc = stKeyString, 0
		case c == '}' && s.state == stObjectFirst:
			s.out.writeByte(c)
			s.close()
		default:
			s.giveUpAt(c)
		}
	case stColon:
		if c != ':' {
			s.giveUpAt(c)
			return
		}
		s.out.writeByte(c)
		s.state = stValue
	case stAfterValue:
		top := &s.stack[len(s.stack)-1]
		switch {
		case c == ',':
			s.out.writeByte(c)
			if top.object {
				s.state = stKey
			} else {
				s.state = stValue
			}
		case c == '}' && top.object, c == ']' && !top.object:
			s.out.writeByte(c)
			s.close()
		default:
			s.giveUpAt(c)
		}
	default: // stEnd
		s.giveUpAt(c)
	}
}

// maxDepth is encoding/json's nesting limit: a frame nested deeper is not
// one it reads.
const maxDepth = 10000

// value begins a value whose first byte is c.
func (s *frameScanner) value(c byte) {
	switch {
	case c == '{', c == '[', c == '"', c == '-', '0' <= c && c <= '9', c == 't', c == 'f', c == 'n':
	default:
		s.giveUpAt(c)
		return
	}
	depth, attachment := 0, -1
	if n := len(s.stack); n > 0 {
		parent := &s.stack[n-1]
		depth, attachment = -1, parent.attachment
		switch {
		case parent.depth < 0:
		case parent.object && parent.match:
			depth = parent.depth + 1
		case !parent.object:
			// Only an array where attachmentDataPath has "*" is on it.
			depth = parent.depth + 1
			attachment = parent.elements
		}
		if !parent.object {
			parent.elements++
		}
	}
	s.out.writeByte(c)
	switch c {
	case '{', '[':
		if len(s.stack) == maxDepth {
			s.giveUp()
			return
		}
		object := c == '{'
		if depth >= len(attachmentDataPath) || depth >= 0 && (attachmentDataPath[depth] == "*") == object {
			depth = -1 // off the path: an object where an array is wanted, or the reverse
		}
		s.stack = append(s.stack, container{object: object, depth: depth, attachment: attachment})
		if object {
			s.state = stObjectFirst
		} else {
			s.state = stArrayFirst
		}
	case '"':
		s.state, s.esc = stString, 0
		if depth == len(attachmentDataPath) {
			s.spill = &JSONString{}
			s.spills = append(s.spills, spilled{at: s.out.size, str: s.spill})
			if s.data == nil {
				s.data = make(AttachmentData)
			}
			s.data[attachment] = s.spill
		}
	default:
		s.state = stLiteral
	}
}

// close ends the innermost container.
func (s *frameScanner) close() {
	s.stack = s.stack[:len(s.stack)-1]
	s.afterValue()
}

func (s *frameScanner) afterValue() {
	if len(s.stack) == 0 {
		s.state = stEnd
	} else {
		s.state = stAfterValue
	}
}

// stringBytes takes bytes of a string up to and including its closing
// quote, and returns the rest of p.
func (s *frameScanner) stringBytes(p []byte) []byte {
	if s.spill == nil {
		return s.plainString(p)
	}
	return s.keptString(p)
}

// plainString takes bytes of a string left in the frame: json.Valid judges
// it with the frame, so only where it ends is looked for, with the
// assembly of bytes.IndexByte (a multi-megabyte string of another request
// costs little, even under the race detector).
func (s *frameScanner) plainString(p []byte) []byte {
	i := 0
	for {
		if s.esc != 0 { // the byte after a backslash
			if i == len(p) {
				break
			}
			s.esc = 0
			i++
			continue
		}
		end := len(p)
		quote := bytes.IndexByte(p[i:], '"')
		if quote >= 0 {
			end = i + quote
		}
		if b := bytes.IndexByte(p[i:end], '\\'); b >= 0 {
			i += b + 1
			s.esc = 1
			continue
		}
		if quote < 0 {
			break
		}
		s.emitString(p[:end])
		s.endString()
		return p[end+1:]
	}
	s.emitString(p)
	return nil
}

// keptString takes bytes of a string kept out of the frame, checking its
// escapes and characters as JSON has them, since the frame json.Valid
// judges no longer holds them.
func (s *frameScanner) keptString(p []byte) []byte {
	for i := 0; i < len(p); i++ {
		if s.esc == 0 {
			// The bulk of a string: run to the next byte that means
			// something.
			for i < len(p) && !stringStop[p[i]] {
				i++
			}
			if i == len(p) {
				break
			}
		}
		c := p[i]
		switch s.esc {
		case 0:
			switch {
			case c == '"':
				s.emitString(p[:i])
				s.endString()
				return p[i+1:]
			case c == '\\':
				s.esc = 1
			case c < 0x20:
				s.emitString(p[:i])
				s.giveUpAt(c)
				return p[i+1:]
			}
		case 1:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.esc = 0
			case 'u':
				s.esc = 5
			default:
				s.emitString(p[:i])
				s.giveUpAt(c)
				return p[i+1:]
			}
		default: // a hex digit of \u
			if _, ok := hexValue(c); !ok {
				s.emitString(p[:i])
				s.giveUpAt(c)
				return p[i+1:]
			}
			if s.esc--; s.esc == 1 {
				s.esc = 0
			}
		}
	}
	s.emitString(p)
	return nil
}

// emit appends p to the frame.
func (s *frameScanner) emit(p []byte) { s.out.write(p) }

// stringStop marks the bytes that end a run of a string's plain bytes: the
// closing quote, an escape, and the control characters JSON refuses.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// emitString sends string bytes where the string goes.
func (s *frameScanner) emitString(p []byte) {
	if s.spill != nil {
		s.spill.write(p)
	} else {
		s.emit(p)
	}
	if s.state == stKeyString && s.keyCollect && !s.keyLong {
		if len(s.key)+len(p) > maxKey {
			s.keyLong = true
		} else {
			s.key = append(s.key, p...)
		}
	}
}

// endString takes a string's closing quote; a member name's is where the
// scanner learns whether the member is on the path.
func (s *frameScanner) endString() {
	s.out.writeByte('"')
	s.spill = nil
	if s.state == stString {
		s.afterValue()
		return
	}
	s.state = stColon
	top := &s.stack[len(s.stack)-1]
	top.match = false
	if !s.keyCollect || s.keyLong {
		return
	}
	name := s.key
	if bytes.IndexByte(name, '\\') >= 0 {
		// Checked escape by escape as it was read, so it decodes.
		var v string
		_ = json.Unmarshal(append(append([]byte{'"'}, name...), '"'), &v)
		name = []byte(v)
	}
	want := attachmentDataPath[top.depth]
	switch {
	case string(name) == want && top.seen:
		s.giveUp() // named twice: encoding/json would take the last
	case string(name) == want:
		top.seen, top.match = true, true
	case bytes.EqualFold(name, attachmentDataPathBytes[top.depth]):
		s.giveUp() // encoding/json would take it for the member too
	}
}

// giveUp stops following the path: the rest of the frame is copied as
// read, and every string kept out so far goes back where it was when the
// frame is put together (finish).
func (s *frameScanner) giveUp() {
	s.data, s.spill, s.verbatim = nil, nil, true
}

// giveUpAt gives up at byte c, which is copied as read.
func (s *frameScanner) giveUpAt(c byte) {
	s.giveUp()
	s.out.writeByte(c)
}

// finish puts the frame together in one slice of its size. A frame that
// ends before its value does is not JSON, and goes on as read.
func (s *frameScanner) finish() []byte {
	if !s.verbatim && s.state != stEnd && !(s.state == stLiteral && len(s.stack) == 0) {
		s.giveUp()
	}
	size := s.out.size
	if s.verbatim {
		for _, sp := range s.spills {
			size += sp.str.size
		}
	}
	frame := make([]byte, 0, size)
	if !s.verbatim {
		return s.out.appendRange(frame, 0, s.out.size)
	}
	// One walk over the chunks, each kept string put back at its offset.
	pos, next := 0, 0
	for i := range s.out.chunks {
		c := s.out.chunk(i)
		for next < len(s.spills) && s.spills[next].at <= pos+len(c) {
			cut := s.spills[next].at - pos
			frame = append(frame, c[:cut]...)
			frame = s.spills[next].str.appendRange(frame, 0, s.spills[next].str.size)
			c, pos, next = c[cut:], pos+cut, next+1
		}
		frame = append(frame, c...)
		pos += len(c)
	}
	for ; next < len(s.spills); next++ { // kept out after the last byte
		frame = s.spills[next].str.appendRange(frame, 0, s.spills[next].str.size)
	}
	s.spills = nil
	return frame
}
