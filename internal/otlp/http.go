package otlp

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// The OTLP/HTTP content types.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

func (r *Receiver) httpServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc(TracesPath, r.serveTraces)
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: r.opts.Timeout,
		ReadTimeout:       r.opts.Timeout,
		WriteTimeout:      r.opts.Timeout,
		IdleTimeout:       4 * r.opts.Timeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// serveTraces is the OTLP/HTTP endpoint: POST of an ExportTraceServiceRequest
// in protobuf or JSON, optionally gzip-compressed, answered in the same
// encoding. Garbage gets 400 with the decoder's error, a body over the limit
// (or one that would take more than the whole decoding budget) 413, another
// content type 415; when the budget is in use, 503 with Retry-After.
func (r *Receiver) serveTraces(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.httpError(w, contentProtobuf, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Errorf("%s is not allowed, POST an export", req.Method))
		return
	}
	ct, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || (ct != contentProtobuf && ct != contentJSON) {
		r.httpError(w, contentProtobuf, http.StatusUnsupportedMediaType, "unsupported_media_type",
			fmt.Errorf("content type %q: want %s or %s", req.Header.Get("Content-Type"), contentProtobuf, contentJSON))
		return
	}
	slot := r.httpInFlight.reserve(1)
	if slot == nil {
		r.httpThrottled(w, ct, fmt.Errorf("more than %d exports in flight", r.opts.MaxInFlight))
		return
	}
	defer slot.release()
	body, status, reason, release, err := r.readBody(w, req)
	defer release()
	if err != nil {
		r.refuseHTTP(w, ct, status, reason, err)
		return
	}
	cost, err := r.reserveDecode(body, ct == contentJSON)
	switch {
	case errors.Is(err, errOverBudget):
		r.httpError(w, ct, http.StatusRequestEntityTooLarge, "too_large", err)
		return
	case errors.Is(err, errBusy):
		r.httpThrottled(w, ct, err)
		return
	case err != nil:
		r.httpError(w, ct, http.StatusBadRequest, "bad_payload", fmt.Errorf("decode %s export: %w", ct, err))
		return
	}
	defer cost.release()
	export := ptraceotlp.NewExportRequest()
	if ct == contentJSON {
		err = export.UnmarshalJSON(body)
	} else {
		err = export.UnmarshalProto(body)
	}
	if err != nil {
		r.httpError(w, ct, http.StatusBadRequest, "bad_payload", fmt.Errorf("decode %s export: %w", ct, err))
		return
	}
	resp := r.ingest(export.Traces())
	r.metrics.export("http", "ok")
	r.forward(export)
	var out []byte
	if ct == contentJSON {
		out, err = resp.MarshalJSON()
	} else {
		out, err = resp.MarshalProto()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(out)
}

// readBody reads the body, un-gzipping it, within the size limit and the
// read budget: the body's declared length when it is plain, else the
// largest allowed, is reserved before reading, and only the body's own
// size stays reserved after. release gives the reservation back; it is
// never nil. A status of 503 means the budget is in use.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request) (body []byte, status int, reason string, release func(), err error) {
	release = func() {}
	limit := r.opts.MaxBodyBytes
	enc := req.Header.Get("Content-Encoding")
	plain := enc == "" || enc == "identity"
	if plain && req.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, "too_large", release, fmt.Errorf("export of %d bytes, larger than %d", req.ContentLength, limit)
	}
	want := limit
	if plain && req.ContentLength >= 0 {
		want = req.ContentLength
	}
	res := r.read.reserve(want)
	if res == nil {
		return nil, http.StatusServiceUnavailable, "throttled", release, errors.New("the memory for exports being read is in use")
	}
	release = res.release
	var src io.Reader = http.MaxBytesReader(w, req.Body, limit)
	switch {
	case plain:
	case enc == "gzip":
		zr, zerr := gzip.NewReader(src)
		if zerr != nil {
			return nil, http.StatusBadRequest, "bad_payload", release, fmt.Errorf("gzip body: %w", zerr)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, "unsupported_media_type", release, fmt.Errorf("content encoding %q: want gzip or none", enc)
	}
	if plain && req.ContentLength >= 0 {
		body = make([]byte, req.ContentLength)
		_, err = io.ReadFull(src, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(src, limit+1))
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge) || int64(len(body)) > limit:
		return nil, http.StatusRequestEntityTooLarge, "too_large", release, fmt.Errorf("export larger than %d bytes", limit)
	case err != nil:
		return nil, http.StatusBadRequest, "bad_payload", release, fmt.Errorf("read body: %w", err)
	}
	res.shrink(int64(len(body)))
	return body, 0, "", release, nil
}

// refuseHTTP answers a refused export: throttled (503) or another error.
func (r *Receiver) refuseHTTP(w http.ResponseWriter, ct string, status int, reason string, err error) {
	if status == http.StatusServiceUnavailable {
		r.httpThrottled(w, ct, err)
		return
	}
	r.httpError(w, ct, status, reason, err)
}

// httpThrottled asks the sender to retry later, as OTLP/HTTP specifies for
// throttling: 503 with Retry-After.
func (r *Receiver) httpThrottled(w http.ResponseWriter, ct string, err error) {
	w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	r.httpError(w, ct, http.StatusServiceUnavailable, "throttled", fmt.Errorf("otlp receiver busy, retry later: %w", err))
}

// httpError answers with a google.rpc.Status in the request's encoding, as
// OTLP/HTTP specifies, and counts the failure.
func (r *Receiver) httpError(w http.ResponseWriter, ct string, code int, reason string, err error) {
	r.metrics.export("http", reason)
	r.opts.Logger.Debug("OTLP export refused", "reason", reason, "err", err)
	st := &spb.Status{Code: int32(grpcCodeOf(code)), Message: err.Error()}
	var out []byte
	if ct == contentJSON {
		out, _ = json.Marshal(struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}{st.Code, st.Message})
	} else {
		out, _ = proto.Marshal(st)
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

// grpcCodeOf maps an HTTP status to the gRPC code OTLP pairs with it.
func grpcCodeOf(httpStatus int) int {
	switch httpStatus {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return 3 // InvalidArgument
	case http.StatusMethodNotAllowed:
		return 12 // Unimplemented
	case http.StatusServiceUnavailable:
		return 14 // Unavailable
	}
	return 13 // Internal
}
