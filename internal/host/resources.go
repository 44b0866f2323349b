package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/resources"
	"github.com/ahpd/ahpd/internal/watch"
	"github.com/google/uuid"
)

// The resource* commands and resource watches: the host's files under the
// served paths, for a client that browses them (a VS Code window picking a
// folder, opening a file an agent edited, watching a folder). Every command
// checks its grant (resource:read, resource:write) and confines every path
// to the served directories (internal/resources).

// Resource command methods.
const (
	methodResourceList        = "resourceList"
	methodResourceRead        = "resourceRead"
	methodResourceWrite       = "resourceWrite"
	methodResourceDelete      = "resourceDelete"
	methodResourceMove        = "resourceMove"
	methodResourceCopy        = "resourceCopy"
	methodResourceMkdir       = "resourceMkdir"
	methodResourceResolve     = "resourceResolve"
	methodResourceRequest     = "resourceRequest"
	methodCreateResourceWatch = "createResourceWatch"
)

// Content encodings.
const (
	encodingUTF8   = "utf-8"
	encodingBase64 = "base64"
)

// resourceWatchScheme is the scheme of the channels createResourceWatch
// answers with.
const resourceWatchScheme = "ahp-resource-watch"

const (
	// maxWatches bounds the resource watches open at once, and
	// maxWatchesPerClient those one connection holds: each is kernel
	// watches (watch.MaxFolders at most).
	maxWatches          = 1024
	maxWatchesPerClient = 64
)

// resourceDesk answers the resource commands and keeps the resource
// watches.
type resourceDesk struct {
	files      *resources.FS
	bus        *bus.Bus
	changesets *changesetDesk // a changeset's content is read with resourceRead
	clients    *clientFiles   // a client's own files, read through it (clientfs.go)

	// mu (rank lockorder.HostWatches) guards watches. subscribeWatch holds
	// it while the bus subscribes the client (so the bus's lock, rank Bus,
	// and the client's are taken inside), and watchesLeft while it counts
	// a watch's subscribers.
	mu      lockorder.Mutex
	watches map[string]*resourceWatch
}

// resourceWatch is one open watch channel.
type resourceWatch struct {
	channel string
	owner   *client
	state   ahp.ResourceWatchState
	w       *watch.Watch
	// subscribed: someone subscribed once; the watch ends when the last
	// subscriber goes.
	subscribed bool
}

func newResourceDesk(paths servedPaths, b *bus.Bus, changesets *changesetDesk) *resourceDesk {
	return &resourceDesk{files: resources.New(paths), bus: b, changesets: changesets,
		mu: lockorder.Mutex{Rank: lockorder.HostWatches}, watches: make(map[string]*resourceWatch)}
}

// close ends every watch.
func (d *resourceDesk) close() {
	d.mu.Lock()
	all := d.watches
	d.watches = map[string]*resourceWatch{}
	d.mu.Unlock()
	for _, w := range all {
		w.w.Close()
	}
}

// request answers one of the resource commands; handled is false
// for any other method.
func (d *resourceDesk) request(ctx context.Context, cl *client, method string, params json.RawMessage) (res any, handled bool, err error) {
	switch method {
	case methodResourceList, methodResourceRead, methodResourceWrite, methodResourceDelete, methodResourceMove,
		methodResourceCopy, methodResourceMkdir, methodResourceResolve, methodResourceRequest, methodCreateResourceWatch:
	default:
		return nil, false, nil
	}
	res, err = d.command(ctx, cl, method, params)
	return res, true, err
}

// resourceParams is every resource command's params.
type resourceParams struct {
	Channel        string        `json:"channel"`
	URI            string        `json:"uri"`
	Source         string        `json:"source"`
	Destination    string        `json:"destination"`
	Data           *string       `json:"data"`
	Encoding       string        `json:"encoding"`
	Mode           string        `json:"mode"`
	Position       *int64        `json:"position"`
	CreateOnly     bool          `json:"createOnly"`
	IfMatch        *string       `json:"ifMatch"`
	FailIfExists   bool          `json:"failIfExists"`
	Recursive      bool          `json:"recursive"`
	FollowSymlinks *bool         `json:"followSymlinks"`
	Read           bool          `json:"read"`
	Write          bool          `json:"write"`
	Excludes       *ahp.GlobList `json:"excludes"`
	Includes       *ahp.GlobList `json:"includes"`
}

// resourceGrants is what each command needs.
var resourceGrants = map[string][]string{
	methodResourceList:        {auth.ResourceRead},
	methodResourceRead:        {auth.ResourceRead},
	methodResourceResolve:     {auth.ResourceRead},
	methodCreateResourceWatch: {auth.ResourceRead},
	methodResourceWrite:       {auth.ResourceWrite},
	methodResourceDelete:      {auth.ResourceWrite},
	methodResourceMove:        {auth.ResourceWrite},
	methodResourceMkdir:       {auth.ResourceWrite},
	methodResourceCopy:        {auth.ResourceRead, auth.ResourceWrite},
}

func (d *resourceDesk) command(ctx context.Context, cl *client, method string, params json.RawMessage) (any, error) {
	var p resourceParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return nil, err
	}
	if method == methodResourceRead && changeset.IsGitContent(p.URI) {
		return d.changesets.git.readContent(context.Background(), cl, p.URI, p.Encoding) // gitchangesets.go
	}
	if method == methodResourceRead && changeset.IsContent(p.URI) {
		return d.changesets.readContent(context.Background(), cl, p.URI, p.Encoding) // changesets.go
	}
	grants := resourceGrants[method]
	if method == methodResourceRequest {
		grants = nil
		if p.Read || !p.Write {
			grants = append(grants, auth.ResourceRead) // neither flag reads as read
		}
		if p.Write {
			grants = append(grants, auth.ResourceWrite)
		}
	}
	for _, g := range grants {
		if !cl.principal.Can(g) {
			return nil, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "%s needs the grant %s", method, g), map[string]any{"grant": g})
		}
	}
	if isClientCommand(p) {
		return d.clients.command(ctx, cl, method, p) // clientfs.go
	}
	fs := d.files
	switch method {
	case methodResourceMove, methodResourceCopy:
		src, err := localPath("source", p.Source)
		if err != nil {
			return nil, err
		}
		dst, err := localPath("destination", p.Destination)
		if err != nil {
			return nil, err
		}
		if method == methodResourceMove {
			return struct{}{}, fs.Move(src, dst, p.FailIfExists)
		}
		return struct{}{}, fs.Copy(src, dst, p.FailIfExists)
	}
	path, err := localPath("uri", p.URI)
	if err != nil {
		return nil, err
	}
	switch method {
	case methodResourceList:
		entries, err := fs.List(path)
		if err != nil {
			return nil, err
		}
		return map[string]any{"entries": entries}, nil
	case methodResourceRead:
		data, err := fs.Read(path)
		if err != nil {
			return nil, err
		}
		return readResult(path, data, p.Encoding), nil
	case methodResourceWrite:
		if p.Data == nil {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.data: required")
		}
		if len(*p.Data) > resources.MaxBytes*4/3+4 {
			// Over the limit in any encoding: refused before it is decoded.
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "write %s: %d bytes of data is over the %d-byte write limit", path, len(*p.Data), resources.MaxBytes)
		}
		data, err := decodeContent(*p.Data, p.Encoding)
		if err != nil {
			return nil, err
		}
		opts := resources.WriteOptions{Mode: p.Mode, CreateOnly: p.CreateOnly, IfMatch: p.IfMatch}
		if p.Position != nil {
			opts.Position = *p.Position
		}
		return struct{}{}, fs.Write(path, data, opts)
	case methodResourceDelete:
		return struct{}{}, fs.Delete(path, p.Recursive)
	case methodResourceMkdir:
		return struct{}{}, fs.Mkdir(path)
	case methodResourceResolve:
		follow := p.FollowSymlinks == nil || *p.FollowSymlinks
		info, err := fs.Resolve(path, follow)
		if err != nil {
			return nil, err
		}
		uri := p.URI
		if follow {
			uri = ahp.FileURI(info.Path)
		}
		res := resolveResult{URI: uri, Type: info.Type, Size: info.Size, ETag: info.ETag}
		if !info.MTime.IsZero() {
			res.MTime = resources.FormatTime(info.MTime)
		}
		if !info.CTime.IsZero() {
			res.CTime = resources.FormatTime(info.CTime)
		}
		if info.Type == resources.TypeFile {
			res.ContentType = resources.ContentType(path, nil)
		}
		return res, nil
	case methodResourceRequest:
		return struct{}{}, fs.Check(path)
	case methodCreateResourceWatch:
		return d.createWatch(cl, p, path)
	}
	return nil, ahp.Errorf(ahp.ErrMethodNotFound, "%s", method)
}

type resolveResult struct {
	URI         string `json:"uri"`
	Type        string `json:"type"`
	Size        *int64 `json:"size,omitempty"`
	MTime       string `json:"mtime,omitempty"`
	CTime       string `json:"ctime,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	ETag        string `json:"etag,omitempty"`
}

// localPath reads a file: URI param as a local path.
func localPath(field, uri string) (string, error) {
	if uri == "" {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.%s: required", field)
	}
	if !strings.HasPrefix(uri, "file:") {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.%s: %s is not a file: URI", field, uri)
	}
	p, err := ahp.LocalPath(uri)
	if err != nil {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.%s: %v", field, err)
	}
	return p, nil
}

// readResult answers a read: in the encoding asked for when the bytes are
// text, else base64.
func readResult(path string, data []byte, want string) map[string]any {
	res := map[string]any{}
	if want != encodingBase64 && utf8.Valid(data) {
		res["data"], res["encoding"] = string(data), encodingUTF8
	} else {
		res["data"], res["encoding"] = base64.StdEncoding.EncodeToString(data), encodingBase64
	}
	if ct := resources.ContentType(path, nil); ct != "" {
		res["contentType"] = ct
	}
	return res
}

// decodeContent reads a write's data in its encoding.
func decodeContent(data, encoding string) ([]byte, error) {
	switch encoding {
	case encodingUTF8, "":
		return []byte(data), nil
	case encodingBase64:
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.data: not base64: %v", err)
		}
		return b, nil
	}
	return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.encoding: %q is neither utf-8 nor base64", encoding)
}

// createWatch opens a watch channel on an existing folder or file.
func (d *resourceDesk) createWatch(cl *client, p resourceParams, path string) (any, error) {
	real, _, err := d.files.Locate(path)
	if err != nil {
		return nil, err
	}
	channel := resourceWatchScheme + ":/" + uuid.NewString()
	opts := watch.Options{Recursive: p.Recursive}
	if p.Excludes != nil {
		opts.Excludes = p.Excludes.Items
	}
	if p.Includes != nil {
		opts.Includes = p.Includes.Items
	}
	rw := &resourceWatch{channel: channel, owner: cl,
		state: ahp.ResourceWatchState{Root: p.URI, Recursive: p.Recursive, Excludes: p.Excludes, Includes: p.Includes}}
	d.mu.Lock()
	mine := 0
	for _, w := range d.watches {
		if w.owner == cl {
			mine++
		}
	}
	full := len(d.watches) >= maxWatches || mine >= maxWatchesPerClient
	d.mu.Unlock()
	if full {
		return nil, ahp.Errorf(ahp.ErrInvalidRequest, "createResourceWatch: too many watches open (%d per connection, %d in all)", maxWatchesPerClient, maxWatches)
	}
	report := func(changes []watch.Change) {
		items := make([]ahp.ResourceChange, 0, len(changes))
		for _, c := range changes {
			// Say each path under the root as the client named the root.
			shown := path
			if rel, err := filepath.Rel(real, c.Path); err == nil && rel != "." {
				shown = filepath.Join(path, rel)
			}
			items = append(items, ahp.ResourceChange{URI: ahp.FileURI(shown), Type: c.Type})
		}
		d.bus.Publish(channel, ahp.ResourceWatchChanged{Changes: ahp.ResourceChanges{Items: items}}, nil)
	}
	w, err := watch.Start(real, opts, report, func() { d.dropWatch(channel) })
	if err != nil {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "createResourceWatch: %v", err)
	}
	rw.w = w
	d.mu.Lock()
	d.watches[channel] = rw
	d.mu.Unlock()
	return map[string]any{"channel": channel}, nil
}

// dropWatch ends a watch and forgets its channel.
func (d *resourceDesk) dropWatch(channel string) {
	d.mu.Lock()
	rw := d.watches[channel]
	delete(d.watches, channel)
	d.mu.Unlock()
	if rw != nil {
		rw.w.Close()
		d.bus.DropChannel(channel)
	}
}

// isResourceWatch reports whether channel is of the watch scheme.
func isResourceWatch(channel string) bool {
	return strings.HasPrefix(channel, resourceWatchScheme+":")
}

// subscribeWatch subscribes cl to a watch channel.
func (d *resourceDesk) subscribeWatch(cl *client, channel string) (ahp.Snapshot, error) {
	if !cl.principal.Can(auth.ResourceRead) {
		return ahp.Snapshot{}, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "reading %s needs the grant %s", channel, auth.ResourceRead), map[string]any{"grant": auth.ResourceRead})
	}
	id, ok := strings.CutPrefix(channel, resourceWatchScheme+":/")
	if _, err := uuid.Parse(id); !ok || err != nil || strings.Contains(id, "/") {
		return ahp.Snapshot{}, ahp.Errorf(ahp.ErrInvalidParams, "params.channel: %s is not a resource watch channel (%s:/<id>)", channel, resourceWatchScheme)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rw := d.watches[channel]
	if rw == nil {
		return ahp.Snapshot{}, ahp.Errorf(ahp.ErrResourceNotFound, "%s", channel)
	}
	rw.subscribed = true
	seq := d.bus.Subscribe(cl, channel)
	raw, err := json.Marshal(rw.state)
	if err != nil {
		return ahp.Snapshot{}, err
	}
	return ahp.Snapshot{Resource: channel, State: json.RawMessage(raw), FromSeq: seq}, nil
}

// watchesLeft ends the watches that have lost their last subscriber, and
// (with gone) those gone opened: a watch dies with its connection.
func (d *resourceDesk) watchesLeft(gone *client) {
	d.mu.Lock()
	var drop []string
	for ch, rw := range d.watches {
		if (gone != nil && rw.owner == gone) || (rw.subscribed && d.bus.Subscribers(ch) == 0) {
			drop = append(drop, ch)
		}
	}
	d.mu.Unlock()
	for _, ch := range drop {
		d.dropWatch(ch)
	}
}

// watchExists reports whether channel is an open watch.
func (d *resourceDesk) watchExists(channel string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.watches[channel] != nil
}
