package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

func (s *azureStore) Create(ctx context.Context, key string, opts ...PutOption) (Upload, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("objstore: create: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("objstore: create %s: %w", s.location(key), err)
	}
	u := &azureUpload{
		s:     s,
		key:   key,
		po:    newPutOptions(opts),
		nonce: rand.Text()[:16],
	}
	u.init(ctx, s.pool, s.blockSize, s.concurrency, "block")
	return u, nil
}

// azureUpload is one object on its way to Azure. It fills one block buffer
// at a time. A full block stays in its buffer until more bytes arrive, so
// that an object of exactly one block is still a single Put Blob; then it
// is shipped to a goroutine of its own that stages it (Put Block), and
// gives the buffer back to the pool once Azure has it. Commit commits the
// block list, create-if-absent.
type azureUpload struct {
	s     *azureStore
	key   string
	po    putOptions
	nonce string // starts the upload's block ids (see azureStore)
	partUpload
	blocks []string // the ids of the blocks shipped, in order; owned as buf is
}

func (u *azureUpload) Write(p []byte) (int, error) {
	n, err := u.fill(p, u.ship)
	if err != nil {
		return n, u.errorf("write", err)
	}
	return n, nil
}

// blockID returns the id of block number (from 0): the upload's nonce and
// the number, base64, all of one length as Azure requires.
func (u *azureUpload) blockID(number int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", u.nonce, number))
}

// ship hands the filled buffer to a goroutine that stages it as the next
// block. It waits, within ctx, for a free slot.
func (u *azureUpload) ship(ctx context.Context) error {
	if err := u.failure(); err != nil {
		return err
	}
	if len(u.blocks) >= azureMaxBlocks {
		return fmt.Errorf("object exceeds %d blocks of %d bytes", azureMaxBlocks, u.s.blockSize)
	}
	select {
	case u.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	buf, n := u.buf, u.n
	u.buf, u.n = nil, 0
	number := len(u.blocks)
	id := u.blockID(number)
	u.blocks = append(u.blocks, id)
	u.inflight.Add(1)
	go u.stageBlock(number, id, buf, n)
	return nil
}

// stageBlock stages buf[:n] as block id, number (from 0), or records the failure, which
// dooms the upload: the blocks still in flight are stopped.
func (u *azureUpload) stageBlock(number int, id string, buf []byte, n int) {
	defer u.inflight.Done()
	defer func() { <-u.slots }()
	_, err := u.s.client.NewBlockBlobClient(u.s.prefix+u.key).StageBlock(u.ctx, id,
		streaming.NopCloser(bytes.NewReader(buf[:n])), nil)
	if err != nil {
		// net/http may still be reading buf from another goroutine: a
		// server may answer before reading it, and a cancelled request
		// is abandoned, not waited for.
		dropBuffer(u.s.pool, buf)
		u.setErr(fmt.Errorf("staging block %d: %w", number, azureError(err)))
		u.cancel()
		return
	}
	u.s.pool.Put(buf) // Azure has stored every byte: the transport has read them all
}

// azureIfAbsent is If-None-Match: *, create-if-absent.
func azureIfAbsent() *blob.AccessConditions {
	any := azcore.ETagAny
	return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &any}}
}

// headers returns the blob's HTTP headers and metadata.
func (u *azureUpload) headers() (*blob.HTTPHeaders, map[string]*string) {
	h := &blob.HTTPHeaders{}
	if u.po.contentType != "" {
		h.BlobContentType = &u.po.contentType
	} else {
		ct := defaultContentType
		h.BlobContentType = &ct
	}
	var md map[string]*string
	for k, v := range u.po.metadata {
		if md == nil {
			md = make(map[string]*string)
		}
		md[azureMetadataName(k)] = &v
	}
	return h, md
}

// azureMetadataName turns a metadata key into a name that Azure takes (a
// C# identifier): every character but ASCII letters, digits and '_'
// becomes '_', and a leading digit gets a '_' before it.
func azureMetadataName(key string) string {
	b := []byte(key)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

func (u *azureUpload) Commit(ctx context.Context) (Info, error) {
	if err := u.state.errFinished(); err != nil {
		return Info{}, u.errorf("commit", err)
	}
	info, err := u.commit(ctx)
	if err != nil {
		err = u.fail(err)
		u.cleanup()
		u.state = uploadAborted
		return Info{}, u.errorf("commit", err)
	}
	u.state = uploadCommitted
	u.cancel()
	return info, nil
}

func (u *azureUpload) commit(ctx context.Context) (Info, error) {
	if err := u.check(); err != nil {
		return Info{}, err
	}
	// Both ctx and the Create context bound the commit.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(u.ctx, cancel)()

	bb := u.s.client.NewBlockBlobClient(u.s.prefix + u.key)
	h, md := u.headers()
	if len(u.blocks) == 0 {
		return u.putBlob(ctx, bb, h, md)
	}
	if u.n > 0 {
		if err := u.ship(ctx); err != nil {
			return Info{}, err
		}
	}
	if err := u.wait(ctx); err != nil {
		return Info{}, err
	}
	if err := u.failure(); err != nil {
		return Info{}, err
	}
	resp, err := bb.CommitBlockList(ctx, u.blocks, &blockblob.CommitBlockListOptions{
		HTTPHeaders: h, Metadata: md, AccessConditions: azureIfAbsent(),
	})
	if bloberror.HasCode(err, bloberror.InvalidBlockList) {
		// The staged blocks are gone: another writer committed the name
		// (which discards every uncommitted block), or an earlier attempt
		// of this very request did and its answer was lost. If the key
		// exists, the caller adopts it, as after a 409.
		_, herr := u.s.Head(ctx, u.key)
		switch {
		case herr == nil:
			return Info{}, fmt.Errorf("committing block list: %w: the staged blocks are gone and the key exists: %w", ErrExists, azureError(err))
		case errors.Is(herr, ErrNotExist):
			return Info{}, fmt.Errorf("committing block list: the staged blocks are gone and the key does not exist: %w", azureError(err))
		default:
			return Info{}, fmt.Errorf("committing block list: %w (and then %w)", azureError(err), herr)
		}
	}
	if err != nil {
		return Info{}, fmt.Errorf("committing block list: %w", azureError(err))
	}
	return azureInfo(u.key, &u.written, resp.ETag, resp.LastModified), nil
}

// putBlob stores the object, at most a block, with one Put Blob, streamed
// from the block buffer; the SDK retries it, rewinding the buffer. A retry
// after an attempt that did create the blob, but whose answer was lost,
// meets the condition: ErrExists, which the caller takes as for any
// existing object (see the package documentation).
func (u *azureUpload) putBlob(ctx context.Context, bb *blockblob.Client, h *blob.HTTPHeaders, md map[string]*string) (Info, error) {
	buf := u.buf
	var data []byte
	if buf != nil {
		data = buf[:u.n]
	}
	u.buf, u.n = nil, 0
	resp, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		HTTPHeaders: h, Metadata: md, AccessConditions: azureIfAbsent(),
	})
	if err == nil {
		if buf != nil {
			u.s.pool.Put(buf)
		}
		return azureInfo(u.key, &u.written, resp.ETag, resp.LastModified), nil
	}
	// As in stageBlock, the transport may still be reading buf: it may be
	// read again below, never written, and is dropped in the end.
	defer dropBuffer(u.s.pool, buf)
	err = azureError(err)
	if !bloberror.HasCode(err, bloberror.BlobAlreadyExists) {
		return Info{}, err
	}
	// Azurite refuses a Put Blob with If-None-Match: * over a name that
	// has only uncommitted blocks (a crashed or aborted upload's), where
	// the service takes the name as free. When no blob shows under the
	// name, the object goes up as one staged block and a block list
	// commit, which both take the same way.
	if _, herr := u.s.Head(ctx, u.key); !errors.Is(herr, ErrNotExist) {
		return Info{}, err
	}
	u.blocks = []string{u.blockID(0)}
	if _, serr := bb.StageBlock(ctx, u.blocks[0], streaming.NopCloser(bytes.NewReader(data)), nil); serr != nil {
		return Info{}, fmt.Errorf("staging the only block after %w: %w", err, azureError(serr))
	}
	cresp, cerr := bb.CommitBlockList(ctx, u.blocks, &blockblob.CommitBlockListOptions{
		HTTPHeaders: h, Metadata: md, AccessConditions: azureIfAbsent(),
	})
	if cerr != nil {
		return Info{}, fmt.Errorf("committing block list: %w", azureError(cerr))
	}
	return azureInfo(u.key, &u.written, cresp.ETag, cresp.LastModified), nil
}

// Abort stops the blocks in flight and gives the buffers back. The blocks
// already staged cannot be deleted: they stay uncommitted, invisible, and
// Azure discards them (see AbortStaleUploads).
func (u *azureUpload) Abort(context.Context) error {
	switch u.state {
	case uploadCommitted, uploadAborted:
		return nil
	}
	u.fail(errors.New("upload aborted"))
	u.cleanup()
	u.state = uploadAborted
	return nil
}

// cleanup cancels the blocks in flight, waits for their goroutines, and
// gives the buffer being filled back. Nothing is sent to Azure: the
// cancelled requests end promptly.
func (u *azureUpload) cleanup() {
	u.cancel()
	u.inflight.Wait()
	if u.buf != nil {
		u.s.pool.Put(u.buf)
		u.buf, u.n = nil, 0
	}
}

func (u *azureUpload) errorf(op string, err error) error {
	return fmt.Errorf("objstore: %s %s: %w", op, u.s.location(u.key), err)
}
