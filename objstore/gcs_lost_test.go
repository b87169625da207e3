package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
)

// TestGCSFinalChunkAnswerLost: the last chunk of a resumable upload
// finalizes the object, and its answer is lost (the connection breaks), so
// the SDK sends the chunk again, to a session that is already finalized.
//
// Where fake-gcs-server differs from the service: the service answers the
// repeated chunk of a finalized session with the object's resource (200),
// so the upload succeeds; fake-gcs-server has forgotten the session and
// answers 404. The test runs both: "service" replays the first answer to
// the repeat, as GCS does; "emulator" lets fake-gcs-server answer. On the
// service, Commit succeeds and the object is the upload's. On the
// emulator, Commit fails (not with ErrExists: nothing says the object is
// someone else's), and the sink's retry of the file, a new upload of the
// key, meets the precondition and adopts the object: exactly once either
// way. (pqsink's exactly-once tests, which run on the emulator, so go
// through the second path.)
func TestGCSFinalChunkAnswerLost(t *testing.T) {
	for _, mode := range []string{"service", "emulator"} {
		t.Run(mode, func(t *testing.T) {
			var mu sync.Mutex
			answers := map[string]*httptest.ResponseRecorder{} // by upload_id: the finalizing answer
			var lost, repeats int
			srv := fakegcs.Start(t, fakegcs.WithMiddleware(func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					id := r.URL.Query().Get("upload_id")
					cr := r.Header.Get("Content-Range")
					mu.Lock()
					first, seen := answers[id]
					done := len(answers) > 0
					mu.Unlock()
					if id == "" || strings.HasSuffix(cr, "/*") || done && !seen {
						// Not the last chunk of a session, or of a later
						// session than the first: untouched.
						next.ServeHTTP(w, r)
						return
					}
					if seen {
						mu.Lock()
						repeats++
						mu.Unlock()
						if mode == "service" {
							for k, v := range first.Header() {
								w.Header()[k] = v
							}
							w.WriteHeader(first.Code)
							w.Write(first.Body.Bytes())
							return
						}
						next.ServeHTTP(w, r)
						return
					}
					rec := httptest.NewRecorder()
					next.ServeHTTP(rec, r)
					mu.Lock()
					answers[id] = rec
					if rec.Code == http.StatusOK {
						lost++
					}
					mu.Unlock()
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Errorf("hijacking: %v", err)
						return
					}
					conn.Close()
				})
			}))
			s, _ := openFakeGCS(t, srv)
			defer s.Close()
			data := payload(2*testPartSize+5, 7)
			info, err := stream(t, s, "k", data, 1<<20)
			if lost == 0 || repeats == 0 {
				t.Fatalf("%d finalizing answers lost, %d repeats: the test did not lose the answer", lost, repeats)
			}
			switch mode {
			case "service":
				if err != nil {
					t.Fatalf("Commit after the lost answer, on the service's behaviour: %v", err)
				}
				if info.Size != int64(len(data)) {
					t.Errorf("Commit's info %+v, want %d bytes", info, len(data))
				}
			case "emulator":
				if err == nil || errors.Is(err, ErrExists) {
					t.Fatalf("Commit after the lost answer, on fake-gcs-server: err = %v, want a failure other than ErrExists", err)
				}
				t.Logf("fake-gcs-server's answer: %v", err)
				// The sink's retry of the file.
				_, err := Put(context.Background(), s, "k", bytes.NewReader(data))
				if !errors.Is(err, ErrExists) {
					t.Fatalf("the upload's retry: err = %v, want ErrExists (adopt)", err)
				}
			}
			if got, _ := readAll(t, s, "k"); !bytes.Equal(got, data) {
				t.Errorf("the object holds %d bytes that differ from the upload's %d", len(got), len(data))
			}
			var n int
			for info, err := range s.List(context.Background(), "") {
				if err != nil {
					t.Fatal(err)
				}
				n++
				if info.Key != "k" {
					t.Errorf("object %s, want only k", info.Key)
				}
			}
			if n != 1 {
				t.Errorf("%d objects, want 1", n)
			}
		})
	}
}

// TestGCSChunkAnswerLost: a chunk of a resumable upload reaches the store,
// but its answer is lost, so the SDK sends the chunk again.
//
// Where fake-gcs-server differs from the service: the service knows how
// many bytes of the session it holds, and answers a chunk that it has
// already taken with "308 Resume Incomplete" and the range it holds (a
// 200 with X-Http-Status-Code-Override: 308, to the SDK), without taking
// the bytes twice; fake-gcs-server appends the chunk again, and the object comes
// out a chunk too long. The test runs both: "service" answers the repeat
// as GCS does, and the object is the upload's, byte for byte;
// "emulator" pins fake-gcs-server's behaviour, for which the sink's
// exactly-once tests on it (TestSinkFaults) lose no chunk's answer. If a
// later fake-gcs-server gets this right, this fails: drop the pin, and let
// those tests lose chunks' answers too.
func TestGCSChunkAnswerLost(t *testing.T) {
	for _, mode := range []string{"service", "emulator"} {
		t.Run(mode, func(t *testing.T) {
			var mu sync.Mutex
			held := map[string]int64{} // by upload_id: bytes taken
			var lost, repeats int
			srv := fakegcs.Start(t, fakegcs.WithMiddleware(func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					id := r.URL.Query().Get("upload_id")
					var first, last int64
					if _, err := fmt.Sscanf(r.Header.Get("Content-Range"), "bytes %d-%d/*", &first, &last); id == "" || err != nil {
						next.ServeHTTP(w, r) // not a chunk that leaves the size open
						return
					}
					mu.Lock()
					has, lose := held[id], lost == 0
					mu.Unlock()
					if first < has {
						mu.Lock()
						repeats++
						mu.Unlock()
						if mode == "service" {
							// 308 Resume Incomplete, as the service
							// signals it to a client that sent
							// X-GUploader-No-308 (the SDK does).
							w.Header().Set("X-Http-Status-Code-Override", "308")
							w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", has-1))
							w.WriteHeader(http.StatusOK)
							return
						}
						next.ServeHTTP(w, r)
						return
					}
					rec := httptest.NewRecorder()
					next.ServeHTTP(rec, r)
					mu.Lock()
					if rec.Code < 400 {
						held[id] = last + 1
					}
					if lose {
						lost++
					}
					mu.Unlock()
					if lose {
						conn, _, err := http.NewResponseController(w).Hijack()
						if err != nil {
							t.Errorf("hijacking: %v", err)
							return
						}
						conn.Close()
						return
					}
					for k, v := range rec.Header() {
						w.Header()[k] = v
					}
					w.WriteHeader(rec.Code)
					w.Write(rec.Body.Bytes())
				})
			}))
			s, _ := openFakeGCS(t, srv)
			defer s.Close()
			data := payload(2*testPartSize+5, 9)
			if _, err := stream(t, s, "k", data, 1<<20); err != nil {
				t.Fatalf("Commit after a chunk's lost answer: %v", err)
			}
			if lost != 1 || repeats == 0 {
				t.Fatalf("%d chunk answers lost, %d repeats: the test did not lose one", lost, repeats)
			}
			got, _ := readAll(t, s, "k")
			switch mode {
			case "service":
				if !bytes.Equal(got, data) {
					t.Errorf("the object holds %d bytes, not the upload's %d", len(got), len(data))
				}
			case "emulator":
				if len(got) != len(data)+testPartSize {
					t.Errorf("fake-gcs-server made an object of %d bytes of an upload of %d whose first chunk (%d) went twice: no longer the pinned behaviour (a chunk too long)", len(got), len(data), testPartSize)
				}
			}
		})
	}
}
