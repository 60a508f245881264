package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// openAI is a client of the OpenAI Chat Completions API as OpenAI and the
// OpenAI-compatible servers speak it: POST {base_url}/chat/completions with
// stream: true, answered with server-sent events whose data are
// chat.completion.chunk objects, ending with "data: [DONE]".
type openAI struct {
	o   Options
	url string
	// maxTokensKey is the request field that bounds the reply: OpenAI's
	// own API wants max_completion_tokens (its reasoning models refuse
	// max_tokens); the compatible servers know max_tokens.
	maxTokensKey string
}

func newOpenAI(o Options) *openAI {
	c := &openAI{o: o, url: strings.TrimRight(o.BaseURL, "/") + "/chat/completions", maxTokensKey: "max_tokens"}
	if u, err := url.Parse(o.BaseURL); err == nil && u.Hostname() == "api.openai.com" {
		c.maxTokensKey = "max_completion_tokens"
	}
	return c
}

func (c *openAI) endpoint() string { return c.url }

type openAIMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"`
	ToolCalls  []openAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string     `json:"name"`
		Arguments openAIArgs `json:"arguments"`
	} `json:"function"`
}

// openAIArgs is a tool call's arguments: JSON text in a string, as the API
// sends and takes them. Some compatible servers (llama.cpp, TGI) send the
// object itself instead; read as a string, it failed the whole chunk or
// answer it was in, and with it the reply's text and finish_reason.
type openAIArgs string

// UnmarshalJSON takes a string's value, or the JSON text of anything else
// (an object; whatever else it is, the tool call's result tells the model).
func (a *openAIArgs) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = openAIArgs(s)
		return nil
	}
	*a = openAIArgs(b)
	return nil
}

func (c *openAI) body(conv []message) ([]byte, error) {
	str := func(s string) *string { return &s }
	msgs := []openAIMessage{{Role: "system", Content: str(systemPrompt)}}
	for _, m := range conv {
		switch {
		case m.Role == "assistant":
			om := openAIMessage{Role: "assistant"}
			if m.Text != "" || len(m.Calls) == 0 {
				om.Content = str(m.Text)
			}
			for _, call := range m.Calls {
				tc := openAIToolCall{ID: call.ID, Type: "function"}
				tc.Function.Name = call.Name
				tc.Function.Arguments = openAIArgs(call.Args)
				om.ToolCalls = append(om.ToolCalls, tc)
			}
			msgs = append(msgs, om)
		case len(m.Results) > 0:
			for _, r := range m.Results {
				// The API has no error flag for a tool's answer: the
				// content says so itself ("error: …", "[exit status 1]").
				msgs = append(msgs, openAIMessage{Role: "tool", Content: str(r.Content), ToolCallID: r.CallID})
			}
		default:
			msgs = append(msgs, openAIMessage{Role: m.Role, Content: str(m.Text)})
		}
	}
	defs := toolDefs()
	tools := make([]map[string]any, len(defs))
	for i, d := range defs {
		tools[i] = map[string]any{
			"type":     "function",
			"function": map[string]any{"name": d.Name, "description": d.Description, "parameters": d.Schema},
		}
	}
	return json.Marshal(map[string]any{
		"model":          c.o.Model,
		c.maxTokensKey:   c.o.MaxOutputTokens,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"messages":       msgs,
		"tools":          tools,
	})
}

func (c *openAI) request(conv []message) ([]byte, http.Header, error) {
	header := http.Header{}
	if c.o.Key != "" {
		header.Set("authorization", "Bearer "+c.o.Key)
	}
	body, err := c.body(conv)
	return body, header, err
}

// openAIUsage is a chunk's or a completion's usage. cost is OpenRouter's
// (and LiteLLM's) report of the request's price in USD.
type openAIUsage struct {
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
	Details    struct {
		Cached int64 `json:"cached_tokens"`
		// Written to the cache (OpenRouter, for providers that bill it).
		CacheWrite int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	Cost *float64 `json:"cost"`
}

func (u openAIUsage) usage() usage {
	cached := min(max(u.Details.Cached, 0), u.Prompt)
	written := min(max(u.Details.CacheWrite, 0), u.Prompt-cached)
	return usage{Input: u.Prompt - cached - written, CacheRead: cached, CacheCreation: written, Output: u.Completion}
}

// openAIDeltaCall is a piece of a tool call in a chunk: the first piece of
// a call names it, and the pieces of its arguments follow under the same
// index. Not every server keeps to that (see toolCalls.piece).
type openAIDeltaCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string     `json:"name"`
		Arguments openAIArgs `json:"arguments"`
	} `json:"function"`
}

type openAIError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// toolCalls gathers the tool calls of a streamed answer from their pieces.
type toolCalls struct {
	calls   []*deltaCall       // in the order they began
	byIndex map[int]*deltaCall // the call each index stands for now
}

type deltaCall struct {
	id, name string
	args     strings.Builder
}

// piece adds the i-th tool call piece of a chunk. A piece with an id other
// than its call's begins a new call: some servers give every call index 0
// (proxies) or none (Gemini's OpenAI-compatible endpoint, which sends each
// call whole). A piece without an index belongs to the call before it,
// unless it is not the first of its chunk: one chunk holds one piece of a
// call at most.
func (tc *toolCalls) piece(i int, d openAIDeltaCall) {
	var cl *deltaCall
	if d.Index != nil {
		cl = tc.byIndex[*d.Index]
	} else if i == 0 && len(tc.calls) > 0 {
		cl = tc.calls[len(tc.calls)-1]
	}
	if cl == nil || d.ID != "" && cl.id != "" && d.ID != cl.id {
		cl = &deltaCall{}
		tc.calls = append(tc.calls, cl)
		if d.Index != nil {
			if tc.byIndex == nil {
				tc.byIndex = map[int]*deltaCall{}
			}
			tc.byIndex[*d.Index] = cl
		}
	}
	if d.ID != "" {
		cl.id = d.ID
	}
	if n := d.Function.Name; n != "" && n != cl.name {
		// The name comes once; a server that repeats it in
		// every piece must not have it doubled.
		cl.name += n
	}
	cl.args.WriteString(string(d.Function.Arguments))
}

// stream reads a streamed answer. It ends with [DONE]; a stream that ends
// before it and before any choice finished was cut off.
func (c *openAI) stream(body io.Reader, s sink) (reply, error) {
	var rep reply
	var calls toolCalls
	finished := false
	sse := newSSEReader(body)
	for {
		ev, err := sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) && finished {
				// Some servers send no [DONE] after the last choice.
				break
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended before [DONE]")
			}
			return partial(rep), &apiError{Network: true, Message: "stream cut off: " + err.Error()}
		}
		s.alive()
		if strings.TrimSpace(string(ev.Data)) == "[DONE]" {
			break
		}
		var chunk struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Content   *string           `json:"content"`
					ToolCalls []openAIDeltaCall `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *openAIUsage `json:"usage"`
			Error *openAIError `json:"error"`
		}
		if err := json.Unmarshal(ev.Data, &chunk); err != nil {
			continue
		}
		if chunk.Error != nil {
			return partial(rep), chunkError(chunk.Error)
		}
		if rep.ID == "" {
			rep.ID = chunk.ID
		}
		if chunk.Usage != nil {
			rep.Usage = chunk.Usage.usage()
			rep.Cost = chunk.Usage.Cost
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		if t := ch.Delta.Content; t != nil && *t != "" {
			rep.Text += *t
			s.text(*t)
		}
		for i, d := range ch.Delta.ToolCalls {
			calls.piece(i, d)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			rep.Stop = *ch.FinishReason
			finished = true
		}
	}
	s.endText()
	for n, cl := range calls.calls {
		id := cl.id
		if id == "" {
			// Some local servers give no ids; the conversation needs one.
			id = "call_ralph_" + strconv.Itoa(n)
		}
		args := cl.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		rep.Calls = append(rep.Calls, toolCall{ID: id, Name: cl.name, Args: args})
	}
	return rep, nil
}

// chunkError is an error sent inside a stream.
func chunkError(e *openAIError) *apiError {
	ae := &apiError{Type: e.Type, Message: oneLine(e.Message), Status: http.StatusInternalServerError}
	if code, ok := e.Code.(string); ok && code != "" {
		ae.Type = code
	}
	// OpenRouter sends the upstream HTTP status as the code.
	if code, ok := e.Code.(float64); ok && code >= 400 && code < 600 {
		ae.Status = int(code)
	}
	if strings.Contains(ae.Type, "rate_limit") {
		ae.Status = http.StatusTooManyRequests
	}
	return ae
}

// whole reads an answer that came as one chat.completion object.
func (c *openAI) whole(body io.Reader, s sink) (reply, error) {
	var out struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct {
				Content   *string          `json:"content"`
				ToolCalls []openAIToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *openAIUsage `json:"usage"`
		Error *openAIError `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(body, maxEvent)).Decode(&out); err != nil {
		return reply{}, &apiError{Network: true, Message: "read the answer: " + err.Error()}
	}
	if out.Error != nil {
		return reply{}, chunkError(out.Error)
	}
	rep := reply{ID: out.ID}
	if out.Usage != nil {
		rep.Usage = out.Usage.usage()
		rep.Cost = out.Usage.Cost
	}
	if len(out.Choices) == 0 {
		return reply{}, &apiError{Network: true, Message: "the answer has no choices"}
	}
	ch := out.Choices[0]
	rep.Stop = ch.FinishReason
	if t := ch.Message.Content; t != nil {
		rep.Text = *t
		s.text(*t)
		s.endText()
	}
	for n, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_ralph_" + strconv.Itoa(n)
		}
		rep.Calls = append(rep.Calls, toolCall{ID: id, Name: tc.Function.Name, Args: string(tc.Function.Arguments)})
	}
	return rep, nil
}
