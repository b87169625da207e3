package faultproxy

import (
	"net/http"
	"strings"
)

// Op is an S3 operation, as far as a request's method, path and query
// tell it. The proxy counts and injects faults per Op.
type Op string

// The operations Operation recognises. Requests it cannot name are Other.
const (
	CreateMultipartUpload   Op = "CreateMultipartUpload"
	UploadPart              Op = "UploadPart"
	CompleteMultipartUpload Op = "CompleteMultipartUpload"
	AbortMultipartUpload    Op = "AbortMultipartUpload"
	ListParts               Op = "ListParts"
	ListMultipartUploads    Op = "ListMultipartUploads"
	PutObject               Op = "PutObject"
	GetObject               Op = "GetObject"
	HeadObject              Op = "HeadObject"
	DeleteObject            Op = "DeleteObject"
	DeleteObjects           Op = "DeleteObjects"
	ListObjects             Op = "ListObjects" // V1 and V2
	CreateBucket            Op = "CreateBucket"
	HeadBucket              Op = "HeadBucket"
	DeleteBucket            Op = "DeleteBucket"
	Other                   Op = "Other"
)

// Operation names the S3 operation of a path-style request
// (/bucket/key?query) from its method, whether the path names an object,
// and the query's sub-resources: ?uploads starts or lists multipart
// uploads, ?uploadId (with partNumber) addresses one, and so on. It does
// not trust the SDK's own x-id parameter, which other clients lack.
func Operation(r *http.Request) Op {
	q := r.URL.Query()
	path := strings.TrimPrefix(r.URL.Path, "/")
	if path == "" {
		return Other // ListBuckets, or a host-style request
	}
	_, key, _ := strings.Cut(path, "/")
	object := key != ""
	// No sub-resource: the SDK's x-id names the operation, nothing more.
	plain := len(q) == 0 || len(q) == 1 && q.Has("x-id")
	switch r.Method {
	case http.MethodPost:
		switch {
		case object && q.Has("uploads"):
			return CreateMultipartUpload
		case object && q.Has("uploadId"):
			return CompleteMultipartUpload
		case !object && q.Has("delete"):
			return DeleteObjects
		}
	case http.MethodPut:
		switch {
		case object && q.Has("uploadId") && q.Has("partNumber"):
			return UploadPart
		case object && plain:
			return PutObject
		case !object && plain:
			return CreateBucket
		}
	case http.MethodDelete:
		switch {
		case object && q.Has("uploadId"):
			return AbortMultipartUpload
		case object:
			return DeleteObject
		case plain:
			return DeleteBucket
		}
	case http.MethodHead:
		if object {
			return HeadObject
		}
		return HeadBucket
	case http.MethodGet:
		switch {
		case object && q.Has("uploadId"):
			return ListParts
		case object:
			return GetObject
		case q.Has("uploads"):
			return ListMultipartUploads
		case q.Has("list-type") || plain || q.Has("prefix") || q.Has("delimiter") || q.Has("marker"):
			return ListObjects
		}
	}
	return Other
}

// Classifier names the operation of a request, for a proxy in front of a
// store that speaks another protocol than S3 (StartFor): GCSOperation,
// AzureOperation, or Operation for S3.
type Classifier func(r *http.Request) Op

// GCSOperation names a Google Cloud Storage JSON API request, as the Go
// SDK sends it, after the S3 operation that does the same job, so that a
// test's injections and counts read alike on both stores:
//
//   - a single-request upload (uploadType=multipart) is a PutObject;
//   - the start of a resumable upload is a CreateMultipartUpload, a chunk
//     of it an UploadPart, its last chunk (a Content-Range whose total is
//     known) a CompleteMultipartUpload, a status query (a Content-Range
//     without bytes) a ListParts, and its cancellation an
//     AbortMultipartUpload;
//   - reading an object's metadata is a HeadObject, its data (alt=media,
//     /download/, or the XML API's /BUCKET/OBJECT) a GetObject;
//   - listing a bucket's objects is a ListObjects, deleting one a
//     DeleteObject.
func GCSOperation(r *http.Request) Op {
	q := r.URL.Query()
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/upload/storage/v1/b/"):
		switch r.Method {
		case http.MethodPost:
			if q.Has("upload_id") {
				return gcsChunk(r)
			}
			if q.Get("uploadType") == "resumable" {
				return CreateMultipartUpload
			}
			return PutObject
		case http.MethodPut:
			return gcsChunk(r)
		case http.MethodDelete:
			return AbortMultipartUpload
		}
	case strings.HasPrefix(path, "/download/storage/v1/b/"):
		return GetObject
	case strings.HasPrefix(path, "/storage/v1/b/"):
		_, object, _ := strings.Cut(strings.TrimPrefix(path, "/storage/v1/b/"), "/o")
		object = strings.TrimPrefix(object, "/")
		switch {
		case r.Method == http.MethodGet && object == "":
			return ListObjects
		case r.Method == http.MethodGet && q.Get("alt") == "media":
			return GetObject
		case r.Method == http.MethodGet:
			return HeadObject
		case r.Method == http.MethodDelete && object != "":
			return DeleteObject
		}
	case r.Method == http.MethodGet && strings.Count(strings.Trim(path, "/"), "/") >= 1:
		return GetObject // the XML API: /BUCKET/OBJECT
	}
	return Other
}

// gcsChunk names a request of a resumable upload session by its
// Content-Range: "bytes */N" or "bytes */*" asks for the session's status,
// "bytes A-B/*" is a chunk, "bytes A-B/N" the last one.
func gcsChunk(r *http.Request) Op {
	cr := r.Header.Get("Content-Range")
	switch {
	case strings.HasPrefix(cr, "bytes */*"):
		return ListParts
	case strings.HasPrefix(cr, "bytes */"):
		return CompleteMultipartUpload // all the bytes sent: finalize
	case strings.HasSuffix(cr, "/*"):
		return UploadPart
	}
	return CompleteMultipartUpload
}

// AzureOperation names an Azure Blob Storage request, path-style
// (/ACCOUNT/CONTAINER/BLOB, as through an emulator or a proxy), after the
// S3 operation that does the same job: Put Blob is a PutObject, Put Block
// an UploadPart, Put Block List a CompleteMultipartUpload, Get Block List
// a ListParts, Get Blob a GetObject, Get Blob Properties a HeadObject,
// List Blobs a ListObjects, Delete Blob a DeleteObject, Create Container
// a CreateBucket.
func AzureOperation(r *http.Request) Op {
	q := r.URL.Query()
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	blob := len(parts) == 3 && parts[2] != ""
	comp := q.Get("comp")
	switch r.Method {
	case http.MethodPut:
		switch {
		case blob && comp == "":
			return PutObject
		case blob && comp == "block":
			return UploadPart
		case blob && comp == "blocklist":
			return CompleteMultipartUpload
		case !blob && q.Get("restype") == "container" && comp == "":
			return CreateBucket
		}
	case http.MethodGet:
		switch {
		case blob && comp == "":
			return GetObject
		case blob && comp == "blocklist":
			return ListParts
		case !blob && comp == "list":
			return ListObjects
		}
	case http.MethodHead:
		if blob {
			return HeadObject
		}
	case http.MethodDelete:
		if blob {
			return DeleteObject
		}
	}
	return Other
}
