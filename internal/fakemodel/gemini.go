package fakemodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// The Gemini API, as the Gemini CLI speaks it: POST
// /v1beta/models/{model}:streamGenerateContent?alt=sse carries the
// conversation, answered with server-sent events whose data are
// GenerateContentResponse chunks; a tool call is a functionCall part with
// the tool's own arguments (run_shell_command takes {"command": "…"}, which
// is what Shell builds).
//
// The CLI also makes calls of its own on the side, with plain
// generateContent: routing a prompt to a model, deciding who speaks next,
// detecting loops, compressing the history. They never belong to a
// conversation, so they neither take a step nor meet a fault: they are
// answered with JSON in the shape of the response schema they ask for, or a
// short text. countTokens is answered with Usage.Input.
func init() {
	dialects["POST /v1beta/models/{call}"] = func() dialect { return &gemini{} }
}

type gemini struct {
	ids atomic.Int64 // makes response ids unique
}

// geminiSideCall starts the FirstUser of a side call: it carries the call's
// method and response schema from parse to answer, and no conversation's
// Match can be found in it.
const geminiSideCall = "\x00gemini side call\x00"

// geminiPart is one part of a content; which field is set says its kind.
type geminiPart struct {
	Text             *string         `json:"text"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse json.RawMessage `json:"functionResponse"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

func (d *gemini) parse(r *http.Request, body []byte) (Request, error) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	if !ok || model == "" {
		return Request{}, fmt.Errorf("gemini: no model:method in %q", r.URL.Path)
	}
	var in struct {
		Contents         []geminiContent `json:"contents"`
		GenerationConfig struct {
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, fmt.Errorf("decode gemini request: %w", err)
	}
	req := Request{Model: model}
	switch method {
	case "streamGenerateContent":
		req.Stream = true
	case "generateContent":
		schema := in.GenerationConfig.ResponseJSONSchema
		if len(schema) == 0 {
			schema = in.GenerationConfig.ResponseSchema
		}
		req.FirstUser = geminiSideCall + method + "\n" + string(schema)
		return req, nil
	case "countTokens":
		req.FirstUser = geminiSideCall + method + "\n"
		return req, nil
	default:
		return Request{}, fmt.Errorf("gemini: unknown method %q", method)
	}
	// The CLI puts its session context and the prompt in the first user
	// turn (as two parts, or two contents): the first user message is all
	// the user text before the model first speaks.
	var user []string
	seenModel := false
	for _, c := range in.Contents {
		if c.Role == "model" {
			seenModel = true
		}
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				req.ToolResults++
			}
			if !seenModel && c.Role != "model" && p.Text != nil {
				user = append(user, *p.Text)
			}
		}
	}
	if len(user) == 0 {
		return Request{}, errors.New("gemini request without a user message")
	}
	req.FirstUser = strings.Join(user, "\n")
	return req, nil
}

func (d *gemini) answer(w http.ResponseWriter, req Request, s Step) {
	if rest, ok := strings.CutPrefix(req.FirstUser, geminiSideCall); ok {
		method, schema, _ := strings.Cut(rest, "\n")
		if method == "countTokens" {
			geminiJSON(w, http.StatusOK, map[string]any{"totalTokens": Usage.Input})
			return
		}
		text := s.Text
		if schema != "" && schema != "null" {
			var sc map[string]any
			if json.Unmarshal([]byte(schema), &sc) == nil {
				b, err := json.Marshal(geminiValue(sc, 0))
				if err != nil {
					panic(err)
				}
				text = string(b)
			}
		}
		geminiJSON(w, http.StatusOK, d.chunk(req, []any{map[string]any{"text": text}}, true))
		return
	}
	var chunks [][]any
	if s.Tool != nil {
		args := s.Tool.Input
		if args == nil {
			args = map[string]any{}
		}
		chunks = [][]any{{map[string]any{
			"functionCall": map[string]any{"name": s.Tool.Name, "args": args},
		}}}
	} else {
		// Small pieces, as a model streams: a reply tag may well be cut
		// between two of them.
		for _, piece := range pieces(s.Text, 24) {
			chunks = append(chunks, []any{map[string]any{"text": piece}})
		}
		if len(chunks) == 0 {
			chunks = [][]any{{map[string]any{"text": ""}}}
		}
	}
	if !req.Stream {
		var parts []any
		for _, c := range chunks {
			parts = append(parts, c...)
		}
		geminiJSON(w, http.StatusOK, d.chunk(req, parts, true))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for i, parts := range chunks {
		sse(w, "", d.chunk(req, parts, i == len(chunks)-1))
	}
}

// chunk is one GenerateContentResponse; the last one of an answer says why
// the model stopped and what it used.
func (d *gemini) chunk(req Request, parts []any, last bool) map[string]any {
	cand := map[string]any{
		"content": map[string]any{"role": "model", "parts": parts},
		"index":   0,
	}
	resp := map[string]any{
		"candidates":   []any{cand},
		"modelVersion": req.Model,
		"responseId":   fmt.Sprintf("fake-%06d", d.ids.Add(1)),
	}
	if last {
		cand["finishReason"] = "STOP"
		resp["usageMetadata"] = map[string]any{
			"promptTokenCount":     Usage.Input,
			"candidatesTokenCount": Usage.Output,
			"totalTokenCount":      Usage.Input + Usage.Output,
		}
	}
	return resp
}

// geminiValue makes the simplest value a JSON schema (in either the OpenAPI
// spelling, "type": "OBJECT", or the JSON Schema one) accepts: an object
// with every property, the first value of an enum, the minimum of a number.
func geminiValue(schema map[string]any, depth int) any {
	if depth > 8 {
		return nil
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := schema[k].([]any); ok && len(alts) > 0 {
			if alt, ok := alts[0].(map[string]any); ok {
				return geminiValue(alt, depth+1)
			}
		}
	}
	typ, _ := schema["type"].(string)
	if types, ok := schema["type"].([]any); ok && len(types) > 0 {
		typ, _ = types[0].(string)
	}
	switch strings.ToLower(typ) {
	case "object":
		obj := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				obj[name] = geminiValue(ps, depth+1)
			}
		}
		return obj
	case "array":
		return []any{}
	case "integer", "number":
		if min, ok := schema["minimum"].(float64); ok {
			return min
		}
		return 1
	case "boolean":
		return false
	case "null":
		return nil
	}
	return "fakemodel"
}

func (d *gemini) fail(w http.ResponseWriter, f Fault) {
	// The wait the server asks for, from a retry-after header in seconds.
	delay := ""
	if s := f.Headers["retry-after"]; s != "" {
		if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 {
			delay = strconv.FormatFloat(n, 'f', -1, 64) + "s"
		}
	}
	var details []any
	msg, status := "", ""
	switch f.Status {
	case http.StatusTooManyRequests:
		// A free tier's daily quota: the CLI gives up at once rather than
		// retrying on its own with waits of 5s and more.
		status = "RESOURCE_EXHAUSTED"
		msg = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
				"quotaValue":  "50",
			}},
		})
		if delay != "" {
			msg += " Please retry in " + delay + "."
			details = append(details, map[string]any{
				"@type":      "type.googleapis.com/google.rpc.RetryInfo",
				"retryDelay": delay,
			})
		}
	case http.StatusBadRequest:
		status, msg = "INVALID_ARGUMENT", "Request contains an invalid argument."
	case http.StatusUnauthorized:
		status, msg = "UNAUTHENTICATED", "API key not valid. Please pass a valid API key."
	case http.StatusForbidden:
		status, msg = "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	case http.StatusNotFound:
		status, msg = "NOT_FOUND", "models/unknown is not found for API version v1beta, or is not supported for generateContent."
	case http.StatusServiceUnavailable:
		status, msg = "UNAVAILABLE", "The model is overloaded. Please try again later."
	case http.StatusGatewayTimeout:
		status, msg = "DEADLINE_EXCEEDED", "The request timed out. Please try again."
	default:
		status, msg = "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	}
	e := map[string]any{"code": f.Status, "message": msg, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	geminiJSON(w, f.Status, map[string]any{"error": e})
}

// geminiJSON writes one JSON answer.
func geminiJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	w.Write(b)
}
