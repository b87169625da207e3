package icebergrest

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The AWS credentials a server started with Options.SigV4 set to
// TestSigV4 accepts: give them to the client through the AWS SDK's
// default chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
const (
	AccessKeyID     = "AKIDPQSINKSIGV4"
	SecretAccessKey = "pqsink-sigv4-s3cret"
)

// SigV4 is what a server asks of every request in place of a bearer
// token: an AWS Signature Version 4 Authorization header, by these
// credentials, for this region and service, over the request as it
// arrived. The server recomputes the signature with the AWS SDK's own
// signer from the method, path, query, the headers the request says it
// signed and the body, and refuses with 403 what does not match.
type SigV4 struct {
	Region, Service              string
	AccessKeyID, SecretAccessKey string
	// MaxSkew is how far the request's X-Amz-Date may be from the
	// server's clock. Defaults to 5 minutes.
	MaxSkew time.Duration
}

// TestSigV4 is a SigV4 with the test credentials, for Glue's Iceberg REST
// endpoint of eu-west-1.
func TestSigV4() *SigV4 {
	return &SigV4{Region: "eu-west-1", Service: "glue", AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey}
}

// check verifies r's signature, reading its body and leaving it readable
// again. The error says what does not match.
func (v *SigV4) check(r *http.Request) error {
	auth := r.Header.Get("Authorization")
	const algorithm = "AWS4-HMAC-SHA256 "
	fields, ok := strings.CutPrefix(auth, algorithm)
	if !ok {
		return fmt.Errorf("the request is not signed with AWS SigV4 (Authorization %q)", scheme(auth))
	}
	var credential, signedHeaders string
	for f := range strings.SplitSeq(fields, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Credential":
			credential = val
		case "SignedHeaders":
			signedHeaders = val
		}
	}
	scope := strings.Split(credential, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return fmt.Errorf("malformed credential scope %q", credential)
	}
	key, day, region, service := scope[0], scope[1], scope[2], scope[3]
	switch {
	case key != v.AccessKeyID:
		return fmt.Errorf("the access key %s is not known here", key)
	case region != v.Region:
		return fmt.Errorf("the request is signed for region %s; this endpoint's is %s", region, v.Region)
	case service != v.Service:
		return fmt.Errorf("the request is signed for service %s; this endpoint's is %s", service, v.Service)
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("no valid X-Amz-Date: %v", err)
	}
	skew := v.MaxSkew
	if skew == 0 {
		skew = 5 * time.Minute
	}
	if d := time.Since(when); d > skew || d < -skew {
		return fmt.Errorf("the request was signed at %s, too far from now", when)
	}
	if day != when.Format("20060102") {
		return fmt.Errorf("the credential scope's date %s is not the request's", day)
	}
	names := strings.Split(signedHeaders, ";")
	for _, need := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !slices.Contains(names, need) {
			return fmt.Errorf("the header %s is not signed", need)
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("reading the body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != payload {
		return fmt.Errorf("X-Amz-Content-Sha256 %q is not the body's hash", got)
	}

	// The request again, with only what the client signed, signed with
	// the credentials the server knows.
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return err
	}
	again.Host, again.ContentLength = r.Host, r.ContentLength
	for _, name := range names {
		if name == "host" || name == "content-length" {
			continue
		}
		values := r.Header.Values(name)
		if len(values) == 0 {
			return fmt.Errorf("the signed header %s is missing", name)
		}
		again.Header[http.CanonicalHeaderKey(name)] = values
	}
	creds := aws.Credentials{AccessKeyID: v.AccessKeyID, SecretAccessKey: v.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, payload, v.Service, v.Region, when); err != nil {
		return err
	}
	if want := again.Header.Get("Authorization"); subtle.ConstantTimeCompare([]byte(want), []byte(auth)) != 1 {
		return fmt.Errorf("the signature does not match the request's (signed headers %s)", signedHeaders)
	}
	return nil
}

// scheme is the scheme of an Authorization header, without its
// credentials.
func scheme(auth string) string {
	s, _, _ := strings.Cut(auth, " ")
	return s
}
