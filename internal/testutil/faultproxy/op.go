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
