package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

func (s *s3Store) Create(ctx context.Context, key string, opts ...PutOption) (Upload, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("objstore: create: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("objstore: create %s: %w", s.location(key), err)
	}
	u := &s3Upload{
		s:   s,
		key: key,
		po:  newPutOptions(opts),
	}
	u.init(ctx, s.pool, s.partSize, s.concurrency, "part")
	return u, nil
}

// s3Upload is one object on its way to S3. It fills one part buffer at a
// time. A full part stays in its buffer until more bytes arrive, so that
// an object of exactly one part is still a single PUT and no empty part is
// ever sent; then it is shipped to a goroutine of its own that uploads it
// as the next part of a multipart upload, and returns the buffer to the
// pool once S3 has it.
type s3Upload struct {
	s   *s3Store
	key string
	po  putOptions
	partUpload
	uploadID *string // the multipart upload, once the first part is shipped; owned as buf is
	// parts, guarded by mu, are by part number-1; a part's entry is set
	// when it is uploaded.
	parts []types.CompletedPart
}

func (u *s3Upload) Write(p []byte) (int, error) {
	n, err := u.fill(p, u.ship)
	if err != nil {
		return n, u.errorf("write", err)
	}
	return n, nil
}

func (u *s3Upload) Commit(ctx context.Context) (Info, error) {
	if err := u.state.errFinished(); err != nil {
		return Info{}, u.errorf("commit", err)
	}
	info, err := u.commit(ctx)
	if err != nil {
		err = u.fail(err)
		if cerr := u.cleanup(ctx); cerr != nil {
			err = errors.Join(err, cerr)
		} else {
			u.state = uploadAborted
		}
		return Info{}, u.errorf("commit", err)
	}
	u.state = uploadCommitted
	u.cancel()
	return info, nil
}

func (u *s3Upload) commit(ctx context.Context) (Info, error) {
	if err := u.check(); err != nil {
		return Info{}, err
	}
	// Both ctx and the Create context bound the commit.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(u.ctx, cancel)()

	if u.uploadID == nil {
		return u.putObject(ctx)
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
	return u.complete(ctx)
}

func (u *s3Upload) Abort(ctx context.Context) error {
	switch u.state {
	case uploadCommitted, uploadAborted:
		return nil
	}
	u.state = uploadFailed
	u.setErr(errors.New("upload aborted"))
	if err := u.cleanup(ctx); err != nil {
		return u.errorf("abort", err)
	}
	u.state = uploadAborted
	return nil
}

func (u *s3Upload) errorf(op string, err error) error {
	return fmt.Errorf("objstore: %s %s: %w", op, u.s.location(u.key), err)
}

// putObject stores the object, smaller than a part, with one PUT.
func (u *s3Upload) putObject(ctx context.Context) (Info, error) {
	buf := u.buf
	data := buf[:u.n]
	u.buf, u.n = nil, 0
	in := &s3.PutObjectInput{
		Bucket:        aws.String(u.s.bucket),
		Key:           aws.String(u.s.prefix + u.key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		Metadata:      u.po.metadata,
	}
	if u.s.conditional {
		in.IfNoneMatch = aws.String("*")
	}
	if u.po.contentType != "" {
		in.ContentType = aws.String(u.po.contentType)
	}
	if u.s.sse != "" {
		in.ServerSideEncryption = u.s.sse
		if u.s.kmsKeyID != "" {
			in.SSEKMSKeyId = aws.String(u.s.kmsKeyID)
		}
	}
	var opts []func(*s3.Options)
	if u.s.conditional {
		head := func(ctx context.Context) error {
			_, err := u.s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: in.Bucket, Key: in.Key})
			return err
		}
		opts = append(opts, func(o *s3.Options) { o.APIOptions = append(o.APIOptions, headAfterSendFailure(head)) })
	}
	out, err := u.s.client.PutObject(ctx, in, opts...)
	var exists *errExistsAfterFailure
	if errors.As(err, &exists) {
		dropBuffer(u.s.pool, buf)
		return Info{}, fmt.Errorf("%w: %w", ErrExists, err)
	}
	if err != nil {
		// net/http may still be sending the body from another goroutine:
		// a server may answer (412, 503) before reading it, and a
		// cancelled request is abandoned, not waited for.
		dropBuffer(u.s.pool, buf)
		return Info{}, mapError(err)
	}
	// S3 has stored every byte of the body, so the transport has read it
	// all: the buffer is free. (A failed earlier attempt that net/http may
	// still be sending belongs to a request already answered: nothing it
	// reads now can reach the object.)
	if buf != nil {
		u.s.pool.Put(buf)
	}
	return Info{Key: u.key, Size: int64(len(data)), ETag: unquote(out.ETag)}, nil
}

// start starts the multipart upload.
func (u *s3Upload) start(ctx context.Context) error {
	in := &s3.CreateMultipartUploadInput{
		Bucket:   aws.String(u.s.bucket),
		Key:      aws.String(u.s.prefix + u.key),
		Metadata: u.po.metadata,
	}
	if u.po.contentType != "" {
		in.ContentType = aws.String(u.po.contentType)
	}
	if u.s.sse != "" {
		in.ServerSideEncryption = u.s.sse
		if u.s.kmsKeyID != "" {
			in.SSEKMSKeyId = aws.String(u.s.kmsKeyID)
		}
	}
	out, err := u.s.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return fmt.Errorf("starting multipart upload: %w", mapError(err))
	}
	u.uploadID = out.UploadId
	return nil
}

// ship hands the filled buffer to a goroutine that uploads it as the next
// part, starting the multipart upload first if need be. It waits, within
// ctx, for a free slot.
func (u *s3Upload) ship(ctx context.Context) error {
	if err := u.failure(); err != nil {
		return err
	}
	if u.uploadID == nil {
		if err := u.start(ctx); err != nil {
			return err
		}
	}
	u.mu.Lock()
	number := len(u.parts) + 1
	u.mu.Unlock()
	if number > maxParts {
		return fmt.Errorf("object exceeds %d parts of %d bytes", maxParts, u.s.partSize)
	}
	select {
	case u.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	buf, n := u.buf, u.n
	u.buf, u.n = nil, 0
	u.mu.Lock()
	u.parts = append(u.parts, types.CompletedPart{})
	u.mu.Unlock()
	u.inflight.Add(1)
	go u.uploadPart(u.uploadID, int32(number), buf, n)
	return nil
}

// uploadPart uploads buf[:n] as part number of the multipart upload
// uploadID, and records the part, or the failure, which dooms the upload:
// the parts still in flight are stopped.
func (u *s3Upload) uploadPart(uploadID *string, number int32, buf []byte, n int) {
	defer u.inflight.Done()
	defer func() { <-u.slots }()
	out, err := u.s.client.UploadPart(u.ctx, &s3.UploadPartInput{
		Bucket:        aws.String(u.s.bucket),
		Key:           aws.String(u.s.prefix + u.key),
		UploadId:      uploadID,
		PartNumber:    aws.Int32(number),
		Body:          bytes.NewReader(buf[:n]),
		ContentLength: aws.Int64(int64(n)),
	})
	if err != nil {
		// As in putObject: the transport may still be reading buf.
		dropBuffer(u.s.pool, buf)
		u.setErr(fmt.Errorf("uploading part %d: %w", number, mapError(err)))
		u.cancel()
		return
	}
	u.s.pool.Put(buf) // as in putObject: S3 has it all
	u.mu.Lock()
	u.parts[number-1] = completedPart(number, out)
	u.mu.Unlock()
}

// complete completes the multipart upload once every part is in.
func (u *s3Upload) complete(ctx context.Context) (Info, error) {
	u.mu.Lock()
	parts := slices.Clone(u.parts)
	u.mu.Unlock()
	in := &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(u.s.bucket),
		Key:             aws.String(u.s.prefix + u.key),
		UploadId:        u.uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	if u.s.conditional {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := u.s.client.CompleteMultipartUpload(ctx, in)
	if err == nil {
		u.uploadID = nil // nothing left to abort
		return Info{Key: u.key, Size: u.written, ETag: unquote(out.ETag)}, nil
	}
	if errorCode(err) == "NoSuchUpload" {
		// The upload is gone. Either an earlier attempt of this very
		// request completed it and its answer was lost (the SDK retried
		// after a timeout or a broken connection), or another process
		// aborted it as stale. If the key exists, it is this upload's
		// object or a later writer's; either way the caller adopts it,
		// as after a 412.
		_, herr := u.s.Head(ctx, u.key)
		switch {
		case herr == nil:
			return Info{}, fmt.Errorf("completing multipart upload: %w: the upload is gone and the key exists: %w", ErrExists, err)
		case errors.Is(herr, ErrNotExist):
			return Info{}, fmt.Errorf("completing multipart upload: the upload is gone (aborted as stale by another process?) and the key does not exist: %w", err)
		default:
			return Info{}, fmt.Errorf("completing multipart upload: %w (and then %w)", err, herr)
		}
	}
	return Info{}, fmt.Errorf("completing multipart upload: %w", mapError(err))
}

// cleanup stops the parts in flight and removes whatever the upload has
// left in the store. It runs detached from ctx's cancellation, with a
// timeout of its own: ctx may have ended, which may be why the upload
// failed.
func (u *s3Upload) cleanup(ctx context.Context) error {
	u.cancel()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	// The cancelled parts end promptly. Waiting for them keeps a part
	// from landing after the abort, which would leave it stored (and
	// billed) in an upload that no listing shows any more.
	waitErr := u.wait(ctx)
	if u.buf != nil {
		// Never sent: nothing else can hold it.
		u.s.pool.Put(u.buf)
		u.buf, u.n = nil, 0
	}
	if u.uploadID == nil {
		return nil
	}
	if err := u.s.abortMultipart(ctx, u.s.prefix+u.key, u.uploadID); err != nil {
		return errors.Join(err, waitErr)
	}
	u.uploadID = nil
	return nil
}

// abortMultipart aborts a multipart upload of the full key, and checks
// that it is gone: S3 may still store a part that was in flight during the
// abort, and then the upload has to be aborted again.
func (s *s3Store) abortMultipart(ctx context.Context, fullKey string, uploadID *string) error {
	const attempts = 3
	for range attempts {
		_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(fullKey), UploadId: uploadID,
		})
		if err != nil && statusCode(err) != http.StatusNotFound {
			return fmt.Errorf("aborting multipart upload %s: %w", aws.ToString(uploadID), err)
		}
		_, err = s.client.ListParts(ctx, &s3.ListPartsInput{
			Bucket: aws.String(s.bucket), Key: aws.String(fullKey), UploadId: uploadID, MaxParts: aws.Int32(1),
		})
		if statusCode(err) == http.StatusNotFound {
			return nil
		}
		if err != nil {
			return fmt.Errorf("checking aborted multipart upload %s: %w", aws.ToString(uploadID), err)
		}
	}
	return fmt.Errorf("multipart upload %s still there after %d aborts", aws.ToString(uploadID), attempts)
}

// errorCode returns the S3 error code of a failed call, or "".
func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
