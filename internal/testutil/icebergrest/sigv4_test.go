package icebergrest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// TestSigV4Check: the server takes a request the AWS SDK signed with the
// test credentials for its region and service, and refuses, saying why,
// the same request changed after signing in any part the signature
// covers, or signed otherwise.
func TestSigV4Check(t *testing.T) {
	srv := Start(t, nil, Options{SigV4: TestSigV4()})
	type req struct {
		method, path, body string
		header             http.Header
	}
	good := req{method: http.MethodGet, path: "/v1/config?warehouse=w", header: http.Header{"Content-Type": {"application/json"}}}
	post := req{method: http.MethodPost, path: "/v1/namespaces", body: `{"namespace":["kafka"]}`, header: http.Header{"Content-Type": {"application/json"}}}
	for _, tc := range []struct {
		name            string
		sign            req // what is signed
		send            func(*http.Request)
		key, secret     string
		region, svc     string
		at              time.Time
		want            int
		refusalContains string
	}{
		{name: "signed", sign: good, want: 200},
		{name: "query changed", sign: good, send: func(r *http.Request) { r.URL.RawQuery = "warehouse=other" }, want: 403, refusalContains: "does not match"},
		{name: "path changed", sign: good, send: func(r *http.Request) { r.URL.Path = "/v1/config/" }, want: 403, refusalContains: "does not match"},
		{name: "signed header changed", sign: good, send: func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, want: 403, refusalContains: "does not match"},
		{name: "method changed", sign: good, send: func(r *http.Request) { r.Method = http.MethodDelete }, want: 403, refusalContains: "does not match"},
		{name: "body changed", sign: post, send: func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(`{"namespace":["other"]}`))
		}, want: 403, refusalContains: "not the body's hash"},
		{name: "body and its hash changed", sign: post, send: func(r *http.Request) {
			body := `{"namespace":["other"]}`
			sum := sha256.Sum256([]byte(body))
			r.Body = io.NopCloser(strings.NewReader(body))
			r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		}, want: 403, refusalContains: "does not match"},
		{name: "not signed", sign: good, send: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+Token) }, want: 403, refusalContains: "not signed with AWS SigV4"},
		{name: "another secret", sign: good, secret: "wrong", want: 403, refusalContains: "does not match"},
		{name: "another key", sign: good, key: "AKIDOTHER", want: 403, refusalContains: "AKIDOTHER is not known"},
		{name: "another region", sign: good, region: "us-east-1", want: 403, refusalContains: "region us-east-1"},
		{name: "another service", sign: good, svc: "s3tables", want: 403, refusalContains: "service s3tables"},
		{name: "an hour ago", sign: good, at: time.Now().Add(-time.Hour), want: 403, refusalContains: "too far from now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := func(v, d string) string {
				if v == "" {
					return d
				}
				return v
			}
			r, err := http.NewRequest(tc.sign.method, srv.URL+tc.sign.path, bytes.NewReader([]byte(tc.sign.body)))
			if err != nil {
				t.Fatal(err)
			}
			r.Header = tc.sign.header.Clone()
			sum := sha256.Sum256([]byte(tc.sign.body))
			hash := hex.EncodeToString(sum[:])
			r.Header.Set("X-Amz-Content-Sha256", hash)
			at := tc.at
			if at.IsZero() {
				at = time.Now()
			}
			creds := aws.Credentials{AccessKeyID: def(tc.key, AccessKeyID), SecretAccessKey: def(tc.secret, SecretAccessKey)}
			if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hash, def(tc.svc, "glue"), def(tc.region, "eu-west-1"), at); err != nil {
				t.Fatal(err)
			}
			if tc.send != nil {
				tc.send(r)
			}
			before := len(srv.Refusals())
			rsp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(rsp.Body)
			rsp.Body.Close()
			if rsp.StatusCode != tc.want && !(tc.want == 200 && rsp.StatusCode < 300) {
				t.Fatalf("status %d (%s), want %d", rsp.StatusCode, msg, tc.want)
			}
			refusals := srv.Refusals()[before:]
			if tc.want == 403 && (len(refusals) != 1 || !strings.Contains(refusals[0], tc.refusalContains)) {
				t.Errorf("refused for %q, want %q", refusals, tc.refusalContains)
			}
			if tc.want == 200 && len(refusals) != 0 {
				t.Errorf("refused for %q", refusals)
			}
		})
	}
}
