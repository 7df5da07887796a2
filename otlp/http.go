package otlp

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

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
// 413, another content type 415.
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
	body, status, reason, err := r.readBody(w, req)
	if err != nil {
		r.httpError(w, ct, status, reason, err)
		return
	}
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

// readBody reads the body, un-gzipping it, within the size limit.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request) (body []byte, status int, reason string, err error) {
	limit := r.opts.MaxBodyBytes
	var src io.Reader = http.MaxBytesReader(w, req.Body, limit)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, zerr := gzip.NewReader(src)
		if zerr != nil {
			return nil, http.StatusBadRequest, "bad_payload", fmt.Errorf("gzip body: %w", zerr)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Errorf("content encoding %q: want gzip or none", enc)
	}
	body, err = io.ReadAll(io.LimitReader(src, limit+1))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge) || int64(len(body)) > limit:
		return nil, http.StatusRequestEntityTooLarge, "too_large", fmt.Errorf("export larger than %d bytes", limit)
	case err != nil:
		return nil, http.StatusBadRequest, "bad_payload", fmt.Errorf("read body: %w", err)
	}
	return body, 0, "", nil
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
	}
	return 13 // Internal
}
