package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/resources"
	"github.com/ahpd/ahpd/internal/rpc"
)

// The client-hosted filesystem: the resource commands on a
// vscode-agent-client://<clientId>/... URI (ahp.ClientScheme) are the files
// of the connection that said it is <clientId>, and the host answers them by
// asking that connection, with the same commands sent back to it (reverse
// requests) on the client's own URI. What the client answers, or the error
// it answers with, is passed on; the host adds the checks VS Code's host
// makes on the way (a createOnly write or a failIfExists copy resolves the
// destination first, a delete that is not recursive lists the directory
// first), and it bounds what it forwards and what it takes back.
//
// Who may reach whose files (docs/SECURITY.md): a connection its own, with
// resource:read and resource:write as for the host's files; another
// connection's only with resource:clients as well.
//
// Each command runs on its requester's lane (host.Request → onLane), never
// on a read loop, so a client that answers slowly or never holds up only
// the requests behind it on that lane.

const (
	// defaultClientFileTimeout bounds the wait for a client's answer when
	// Options.ClientFileTimeout is zero (rpc.CallTimeout bounds it too).
	defaultClientFileTimeout = rpc.CallTimeout
	// maxClientFileCalls bounds the reverse requests a connection holds
	// unanswered: in flight, or given up on at the timeout (the count
	// keeps a request the client never answered until the connection ends;
	// its late answer is dropped). Past it the client's files are refused
	// at once until it reconnects.
	maxClientFileCalls = 16
	// maxClientAnswerBytes bounds a client's answer: a read's 8 MiB in
	// base64, and room for the rest.
	maxClientAnswerBytes = resources.MaxBytes*4/3 + 64<<10
	// maxClientText bounds a client's error message, etag and content type
	// as the host passes them on.
	maxClientText = 512
)

// clientFiles answers the resource commands on client-hosted files.
type clientFiles struct {
	conns   *conns
	log     *slog.Logger
	timeout time.Duration
}

// clientFile is one client-hosted file of a command: its owner's
// connection and its URI on the client.
type clientFile struct {
	owner *client
	ahp.ClientFile
}

// isClientCommand reports whether a resource command names a client-hosted
// file (uri, source or destination).
func isClientCommand(p resourceParams) bool {
	return ahp.IsClientURI(p.URI) || ahp.IsClientURI(p.Source) || ahp.IsClientURI(p.Destination)
}

// command answers method on the client-hosted files p names; cl holds the
// method's resource grants already (resourceDesk.command).
func (f *clientFiles) command(ctx context.Context, cl *client, method string, p resourceParams) (any, error) {
	switch method {
	case methodResourceMove, methodResourceCopy:
		return f.transfer(ctx, cl, method, p)
	case methodCreateResourceWatch:
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "createResourceWatch: a watch on a client's files (%s) is not served", p.URI)
	}
	file, err := f.file(cl, "uri", p.URI)
	if err != nil {
		return nil, err
	}
	switch method {
	case methodResourceRead:
		return f.read(ctx, file, p.Encoding)
	case methodResourceList:
		return f.list(ctx, file)
	case methodResourceResolve:
		return f.resolve(ctx, file, p.URI, p.FollowSymlinks)
	case methodResourceWrite:
		return f.write(ctx, file, p)
	case methodResourceMkdir:
		return struct{}{}, f.call(ctx, file, methodResourceMkdir, map[string]any{"uri": file.URI}, nil)
	case methodResourceDelete:
		return struct{}{}, f.delete(ctx, file, p.Recursive)
	case methodResourceRequest:
		return struct{}{}, f.call(ctx, file, methodResourceRequest, map[string]any{"uri": file.URI, "read": p.Read, "write": p.Write}, nil)
	}
	return nil, ahp.Errorf(ahp.ErrMethodNotFound, "%s", method)
}

// file reads param field (uri, source or destination) as a client-hosted
// file and finds its owner.
func (f *clientFiles) file(cl *client, field, uri string) (clientFile, error) {
	if uri == "" {
		return clientFile{}, ahp.Errorf(ahp.ErrInvalidParams, "params.%s: required", field)
	}
	cf, err := ahp.ParseClientURI(uri)
	if err != nil {
		return clientFile{}, ahp.Errorf(ahp.ErrInvalidParams, "params.%s: %v", field, err)
	}
	owner, err := f.owner(cl, cf.ClientID)
	if err != nil {
		return clientFile{}, err
	}
	return clientFile{owner: owner, ClientFile: cf}, nil
}

// owner is the connection whose files id names. A connection's own id
// (in any case: VS Code lowercases a URI's authority) names its own
// files; any other needs resource:clients, checked before the host says
// whether that client is connected. Two live connections claiming one id
// (a reconnect whose old socket has not closed yet) are not guessed
// between.
func (f *clientFiles) owner(cl *client, id string) (*client, error) {
	if strings.EqualFold(id, cl.ClientID()) {
		return cl, nil
	}
	if !cl.principal.Can(auth.ResourceClients) {
		return nil, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied,
			"the files of client %s need the grant %s (a connection reaches its own with %s and %s)",
			id, auth.ResourceClients, auth.ResourceRead, auth.ResourceWrite), map[string]any{"grant": auth.ResourceClients})
	}
	var exact, folded []*client
	for _, other := range f.conns.live() {
		switch oid := other.ClientID(); {
		case other == cl:
		case oid == id:
			exact = append(exact, other)
		case strings.EqualFold(oid, id):
			folded = append(folded, other)
		}
	}
	if len(exact) == 0 {
		exact = folded
	}
	switch len(exact) {
	case 0:
		return nil, ahp.Errorf(ahp.ErrNotFound, "client %s is not connected to this host", id)
	case 1:
		return exact[0], nil
	}
	return nil, ahp.Errorf(ahp.ErrInternal, "client id %s is claimed by %d connections; the host does not guess which owns the file", id, len(exact))
}

// live are the connections that have said who they are and are open.
func (cs *conns) live() []*client {
	cs.mu.Lock()
	all := make([]*client, 0, len(cs.m))
	for c, cl := range cs.m {
		select {
		case <-c.Done():
		default:
			all = append(all, cl)
		}
	}
	cs.mu.Unlock()
	out := all[:0]
	for _, cl := range all {
		if cl.ready() {
			out = append(out, cl)
		}
	}
	return out
}

// call sends method to file's owner with params (the root channel added)
// and decodes its answer into out (nil: any answer is taken). The owner's
// error answer is passed on (clientError); a gone, silent, oversized or
// malformed answer is an error that says so.
func (f *clientFiles) call(ctx context.Context, file clientFile, method string, params map[string]any, out any) error {
	return f.callBounded(ctx, file, method, params, out, maxClientAnswerBytes)
}

// callBounded is call with an answer of at most maxAnswer bytes (the
// attachment fetch's own bound, attachmentFetchLimitBytes).
func (f *clientFiles) callBounded(ctx context.Context, file clientFile, method string, params map[string]any, out any, maxAnswer int) error {
	owner, id := file.owner, file.ClientID
	if n := owner.fileCalls.Add(1); n > maxClientFileCalls {
		owner.fileCalls.Add(-1)
		return ahp.Errorf(ahp.ErrInternal, "client %s holds %d file requests unanswered; send it again later", id, maxClientFileCalls)
	}
	timeout := f.timeout
	if timeout <= 0 {
		timeout = defaultClientFileTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params["channel"] = ahp.RootURI
	raw, err := owner.conn.Call(ctx, method, params)
	if errors.Is(err, context.DeadlineExceeded) {
		// Never answered: it keeps its place in fileCalls until the
		// connection ends (maxClientFileCalls).
		f.log.Warn("client did not answer a file request in time", "conn", owner.conn.ID(), "client", id, "method", method, "timeout", timeout)
		return ahp.Errorf(ahp.ErrInternal, "client %s did not answer %s of %s within %s", id, method, file.URI, timeout)
	}
	owner.fileCalls.Add(-1)
	var callErr *rpc.CallError
	switch {
	case err == nil:
	case errors.As(err, &callErr):
		return clientError(id, method, callErr)
	case errors.Is(err, rpc.ErrNotServing):
		return ahp.Errorf(ahp.ErrNotFound, "client %s is gone: its connection closed before it answered %s of %s", id, method, file.URI)
	default:
		return ahp.Errorf(ahp.ErrInternal, "%s of %s on client %s: %v", method, file.URI, id, err)
	}
	if len(raw) > maxAnswer {
		return ahp.Errorf(ahp.ErrInternal, "client %s answered %s with %d bytes, over the %d-byte bound", id, method, len(raw), maxAnswer)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return ahp.Errorf(ahp.ErrInternal, "client %s answered %s with a malformed result: %v", id, method, err)
	}
	return nil
}

// passedCodes are the errors a client's answer keeps: what is wrong with
// the file (AHP-1.0.md §10). Any other is the client failing, an internal
// error here that names the client's code.
var passedCodes = map[int]*ahp.Error{
	ahp.CodeNotFound:         ahp.ErrNotFound,
	ahp.CodePermissionDenied: ahp.ErrPermissionDenied,
	ahp.CodeAlreadyExists:    ahp.ErrAlreadyExists,
	ahp.CodeConflict:         ahp.ErrConflict,
	ahp.CodeInvalidParams:    ahp.ErrInvalidParams,
}

func clientError(id, method string, e *rpc.CallError) error {
	msg := clip(e.Message)
	if sentinel, ok := passedCodes[int(e.Code)]; ok {
		return ahp.Errorf(sentinel, "client %s: %s", id, msg)
	}
	return ahp.Errorf(ahp.ErrInternal, "client %s answered %s with error %d: %s", id, method, e.Code, msg)
}

// clip bounds a text a client gave to maxClientText bytes of valid UTF-8,
// cut where a character starts.
func clip(s string) string {
	if len(s) > maxClientText {
		cut := maxClientText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// clientReadResult is a client's resourceRead answer.
type clientReadResult struct {
	Data        *string `json:"data"`
	Encoding    string  `json:"encoding"`
	ContentType string  `json:"contentType"`
}

// read asks the client for the file's bytes in base64 (exact whatever they
// are) and answers in the encoding asked for, as a read of the host's own
// files does (readResult).
func (f *clientFiles) read(ctx context.Context, file clientFile, want string) (any, error) {
	var ans clientReadResult
	if err := f.call(ctx, file, methodResourceRead, map[string]any{"uri": file.URI, "encoding": encodingBase64}, &ans); err != nil {
		return nil, err
	}
	if ans.Data == nil {
		return nil, ahp.Errorf(ahp.ErrInternal, "client %s answered resourceRead of %s without data", file.ClientID, file.URI)
	}
	var data []byte
	switch ans.Encoding {
	case encodingBase64, "":
		if base64.StdEncoding.DecodedLen(len(*ans.Data)) > resources.MaxBytes+3 {
			return nil, overRead(file)
		}
		b, err := base64.StdEncoding.DecodeString(*ans.Data)
		if err != nil {
			return nil, ahp.Errorf(ahp.ErrInternal, "client %s answered resourceRead of %s with data that is not base64: %v", file.ClientID, file.URI, err)
		}
		data = b
	case encodingUTF8, "utf8":
		data = []byte(*ans.Data)
	default:
		return nil, ahp.Errorf(ahp.ErrInternal, "client %s answered resourceRead of %s in encoding %q", file.ClientID, file.URI, clip(ans.Encoding))
	}
	if len(data) > resources.MaxBytes {
		return nil, overRead(file)
	}
	res := readResult(clientPath(file.URI), data, want)
	if ct, ok := mediaType(ans.ContentType); ok {
		res["contentType"] = ct
	}
	return res, nil
}

func overRead(file clientFile) error {
	return ahp.Errorf(ahp.ErrInvalidParams, "read %s of client %s: over the %d-byte read limit", file.URI, file.ClientID, resources.MaxBytes)
}

// clientPath is the path of a client's URI, for its extension.
func clientPath(uri string) string {
	if u, err := url.Parse(uri); err == nil {
		return u.Path
	}
	return ""
}

// mediaType is a content type a client gave, without parameters, when it
// is one.
func mediaType(s string) (string, bool) {
	if s == "" || len(s) > maxClientText {
		return "", false
	}
	media, _, err := mime.ParseMediaType(s)
	return media, err == nil
}

// clientEntry is one entry of a client's resourceList answer.
type clientEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// list resolves the directory first (a missing one is the client's
// NotFound, a file is refused as the host's own files are) and then lists
// it, each entry checked.
func (f *clientFiles) list(ctx context.Context, file clientFile) (any, error) {
	st, err := f.stat(ctx, file, nil)
	if err != nil {
		return nil, err
	}
	if st.Type != resources.TypeDirectory {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "list %s of client %s: not a directory", file.URI, file.ClientID)
	}
	entries, err := f.entries(ctx, file)
	if err != nil {
		return nil, err
	}
	return map[string]any{"entries": entries}, nil
}

// entries lists a client's directory: at most resources.MaxEntries, each a
// plain name of a known type.
func (f *clientFiles) entries(ctx context.Context, file clientFile) ([]clientEntry, error) {
	var ans struct {
		Entries []clientEntry `json:"entries"`
	}
	if err := f.call(ctx, file, methodResourceList, map[string]any{"uri": file.URI}, &ans); err != nil {
		return nil, err
	}
	if len(ans.Entries) > resources.MaxEntries {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "list %s of client %s: more than %d entries", file.URI, file.ClientID, resources.MaxEntries)
	}
	entries := make([]clientEntry, 0, len(ans.Entries))
	for _, e := range ans.Entries {
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") || len(e.Name) > 4096 || !knownType(e.Type) {
			return nil, ahp.Errorf(ahp.ErrInternal, "client %s listed %s with a malformed entry %q (%s)", file.ClientID, file.URI, clip(e.Name), clip(e.Type))
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func knownType(t string) bool {
	return t == resources.TypeFile || t == resources.TypeDirectory || t == resources.TypeSymlink
}

// clientStat is a client's resourceResolve answer. mtime and ctime may
// come as ISO strings (the protocol) or milliseconds.
type clientStat struct {
	URI   string          `json:"uri"`
	Type  string          `json:"type"`
	Size  *int64          `json:"size"`
	MTime json.RawMessage `json:"mtime"`
	CTime json.RawMessage `json:"ctime"`
	ETag  string          `json:"etag"`
}

// stat resolves a client's file, its type checked.
func (f *clientFiles) stat(ctx context.Context, file clientFile, follow *bool) (clientStat, error) {
	params := map[string]any{"uri": file.URI}
	if follow != nil {
		params["followSymlinks"] = *follow
	}
	var st clientStat
	if err := f.call(ctx, file, methodResourceResolve, params, &st); err != nil {
		return clientStat{}, err
	}
	if !knownType(st.Type) {
		return clientStat{}, ahp.Errorf(ahp.ErrInternal, "client %s resolved %s as type %q", file.ClientID, file.URI, clip(st.Type))
	}
	if st.Size != nil && *st.Size < 0 {
		return clientStat{}, ahp.Errorf(ahp.ErrInternal, "client %s resolved %s with size %d", file.ClientID, file.URI, *st.Size)
	}
	return st, nil
}

// exists resolves a client's file: false when the client says NotFound.
func (f *clientFiles) exists(ctx context.Context, file clientFile) (clientStat, bool, error) {
	st, err := f.stat(ctx, file, nil)
	if errors.Is(err, ahp.ErrNotFound) {
		return clientStat{}, false, nil
	}
	return st, err == nil, err
}

// resolve answers resourceResolve: the client's answer with its URI
// wrapped back into the client-hosted scheme, times as ISO strings, a
// directory's size 0 when the client gave none (as VS Code's host
// answers), and a file's content type from its name.
func (f *clientFiles) resolve(ctx context.Context, file clientFile, asked string, follow *bool) (any, error) {
	st, err := f.stat(ctx, file, follow)
	if err != nil {
		return nil, err
	}
	res := resolveResult{URI: asked, Type: st.Type, Size: st.Size, MTime: clientTime(st.MTime), CTime: clientTime(st.CTime)}
	if st.URI != "" && st.URI != file.URI {
		if wrapped, ok := ahp.ClientURI(file.ClientID, st.URI); ok && len(wrapped) <= 8<<10 {
			res.URI = wrapped
		}
	}
	if len(st.ETag) <= maxClientText {
		res.ETag = strings.ToValidUTF8(st.ETag, "")
	}
	switch st.Type {
	case resources.TypeDirectory:
		if res.Size == nil {
			zero := int64(0)
			res.Size = &zero
		}
	case resources.TypeFile:
		res.ContentType = resources.ContentType(clientPath(file.URI), nil)
	}
	return res, nil
}

// clientTime reads a client's time (an ISO string, or milliseconds since
// the epoch) as the protocol writes it; "" when it is neither.
func clientTime(raw json.RawMessage) string {
	if len(raw) == 0 || len(raw) > 64 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return resources.FormatTime(t)
		}
		return ""
	}
	var ms float64
	if json.Unmarshal(raw, &ms) == nil && ms >= 0 && ms < 1e15 {
		return resources.FormatTime(time.UnixMilli(int64(ms)))
	}
	return ""
}

// write decodes the data as a write to the host's files does, checks
// ifMatch and createOnly against the client's resolve, and sends the
// bytes on exactly: as UTF-8 text when they are that, else in base64
// (VS Code's host passes them through UTF-8 and loses what is not).
func (f *clientFiles) write(ctx context.Context, file clientFile, p resourceParams) (any, error) {
	if p.Data == nil {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.data: required")
	}
	if len(*p.Data) > resources.MaxBytes*4/3+4 {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "write %s of client %s: %d bytes of data is over the %d-byte write limit", file.URI, file.ClientID, len(*p.Data), resources.MaxBytes)
	}
	data, err := decodeContent(*p.Data, p.Encoding)
	if err != nil {
		return nil, err
	}
	if len(data) > resources.MaxBytes {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "write %s of client %s: %d bytes is over the %d-byte write limit", file.URI, file.ClientID, len(data), resources.MaxBytes)
	}
	switch p.Mode {
	case "", resources.ModeTruncate, resources.ModeAppend, resources.ModeInsert:
	default:
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.mode: %q is none of truncate, append, insert", p.Mode)
	}
	if p.Position != nil && *p.Position < 0 {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.position: %d is negative", *p.Position)
	}
	if p.IfMatch != nil || p.CreateOnly {
		st, found, err := f.exists(ctx, file)
		switch {
		case err != nil:
			return nil, err
		case p.CreateOnly && found:
			return nil, ahp.Errorf(ahp.ErrAlreadyExists, "write %s of client %s: already exists (createOnly)", file.URI, file.ClientID)
		case p.IfMatch != nil && !found:
			return nil, ahp.Errorf(ahp.ErrConflict, "write %s of client %s: ifMatch names a file that is not there", file.URI, file.ClientID)
		case p.IfMatch != nil && st.ETag != *p.IfMatch:
			return nil, ahp.Errorf(ahp.ErrConflict, "write %s of client %s: the file changed (etag %q, ifMatch %q)", file.URI, file.ClientID, clip(st.ETag), *p.IfMatch)
		}
	}
	params := map[string]any{"uri": file.URI}
	if utf8.Valid(data) {
		params["data"], params["encoding"] = string(data), encodingUTF8
	} else {
		params["data"], params["encoding"] = base64.StdEncoding.EncodeToString(data), encodingBase64
	}
	if p.Mode != "" {
		params["mode"] = p.Mode
	}
	if p.Position != nil {
		params["position"] = *p.Position
	}
	if p.CreateOnly {
		params["createOnly"] = true
	}
	if p.IfMatch != nil {
		params["ifMatch"] = *p.IfMatch
	}
	return struct{}{}, f.call(ctx, file, methodResourceWrite, params, nil)
}

// delete refuses a non-empty directory unless recursive, as for the
// host's files: the directory is listed first.
func (f *clientFiles) delete(ctx context.Context, file clientFile, recursive bool) error {
	if !recursive {
		st, err := f.stat(ctx, file, nil)
		if err != nil {
			return err
		}
		if st.Type == resources.TypeDirectory {
			entries, err := f.entries(ctx, file)
			if err != nil {
				return err
			}
			if len(entries) > 0 {
				return ahp.Errorf(ahp.ErrInvalidParams, "delete %s of client %s: directory not empty (set recursive to delete it)", file.URI, file.ClientID)
			}
		}
	}
	return f.call(ctx, file, methodResourceDelete, map[string]any{"uri": file.URI, "recursive": recursive}, nil)
}

// transfer answers a copy or move between two files of one client; with
// failIfExists the destination is resolved first.
func (f *clientFiles) transfer(ctx context.Context, cl *client, method string, p resourceParams) (any, error) {
	if !ahp.IsClientURI(p.Source) || !ahp.IsClientURI(p.Destination) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "%s between a client's files and the host's is not served: source and destination are both %s URIs of one client", method, ahp.ClientScheme)
	}
	src, err := f.file(cl, "source", p.Source)
	if err != nil {
		return nil, err
	}
	dst, err := f.file(cl, "destination", p.Destination)
	if err != nil {
		return nil, err
	}
	if src.owner != dst.owner {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "%s between two clients' files (%s, %s) is not served", method, src.ClientID, dst.ClientID)
	}
	if p.FailIfExists {
		if _, found, err := f.exists(ctx, dst); err != nil {
			return nil, err
		} else if found {
			return nil, ahp.Errorf(ahp.ErrAlreadyExists, "%s to %s of client %s: the destination exists (failIfExists)", method, dst.URI, dst.ClientID)
		}
	}
	params := map[string]any{"source": src.URI, "destination": dst.URI, "failIfExists": p.FailIfExists}
	return struct{}{}, f.call(ctx, src, method, params, nil)
}
