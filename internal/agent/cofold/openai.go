package cofold

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sort"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiAPI speaks chat completions through the official SDK, which does
// the SSE decoding and the bounded retries.
type openaiAPI struct {
	client openai.Client
}

func newOpenAI(p ProviderConfig, retries int) *openaiAPI {
	opts := []option.RequestOption{
		option.WithBaseURL(p.BaseURL),
		option.WithMaxRetries(retries),
		// Local servers take any key; the SDK insists on one.
		option.WithAPIKey(orDefault(p.apiKey(), "none")),
	}
	for k, v := range p.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &openaiAPI{client: openai.NewClient(opts...)}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (a *openaiAPI) listModels(ctx context.Context) ([]string, error) {
	page, err := a.client.Models.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range page.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

// openaiMessages builds the chat completions history.
func openaiMessages(system string, msgs []Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)+1)
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	for _, m := range msgs {
		switch m.Role {
		case "user":
			if len(m.Images) == 0 {
				out = append(out, openai.UserMessage(m.Text))
				continue
			}
			parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(m.Text)}
			for _, im := range m.Images {
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
					URL: "data:" + im.MimeType + ";base64," + base64.StdEncoding.EncodeToString(im.Data),
				}))
			}
			out = append(out, openai.UserMessage(parts))
		case "assistant":
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" || len(m.Calls) == 0 {
				am.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.Calls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Input},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		case "tool":
			for _, r := range m.Results {
				out = append(out, openai.ToolMessage(r.Output, r.CallID))
			}
		}
	}
	return out
}

func openaiTools(specs []toolSpec) []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		out = append(out, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        s.Name,
			Description: openai.String(s.Description),
			Parameters: shared.FunctionParameters{
				"type": "object", "properties": s.Properties, "required": s.Required,
			},
		}))
	}
	return out
}

func (a *openaiAPI) stream(ctx context.Context, req request, s sink) (response, error) {
	params := openai.ChatCompletionNewParams{
		Model:         req.Model,
		Messages:      openaiMessages(req.System, req.Messages),
		Tools:         openaiTools(req.Tools),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.Effort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(req.Effort)
	}
	st := a.client.Chat.Completions.NewStreaming(ctx, params)
	defer st.Close()

	var (
		resp  = response{Message: Message{Role: "assistant"}}
		text  []byte
		think []byte
		calls = map[int64]*Call{}
	)
	for st.Next() {
		chunk := st.Current()
		if chunk.JSON.Usage.Valid() {
			resp.InputTokens = int(chunk.Usage.PromptTokens)
			resp.OutputTokens = int(chunk.Usage.CompletionTokens)
			resp.CacheRead = int(chunk.Usage.PromptTokensDetails.CachedTokens)
		}
		for _, ch := range chunk.Choices {
			d := ch.Delta
			// Reasoning is no field of the official API; OpenAI-compatible
			// servers (vLLM, llama.cpp, DeepSeek) send it as
			// reasoning_content or reasoning.
			for _, key := range []string{"reasoning_content", "reasoning"} {
				if f, ok := d.JSON.ExtraFields[key]; ok {
					var r string
					if json.Unmarshal([]byte(f.Raw()), &r) == nil && r != "" {
						think = append(think, r...)
						s.reasoning(r)
					}
				}
			}
			if d.Content != "" {
				text = append(text, d.Content...)
				s.text(d.Content)
			}
			for _, tc := range d.ToolCalls {
				c := calls[tc.Index]
				if c == nil {
					// Some local servers send no call id; the host needs one.
					c = &Call{ID: orDefault(tc.ID, newCallID()), Name: tc.Function.Name}
					calls[tc.Index] = c
					s.toolStart(c.ID, c.Name)
				}
				if tc.Function.Arguments != "" {
					c.Input += tc.Function.Arguments
					s.toolInput(tc.Function.Arguments)
				}
			}
		}
	}
	if err := st.Err(); err != nil {
		return resp, openaiError(err)
	}
	resp.Message.Text = string(text)
	resp.Message.Reasoning = string(think)
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	for _, i := range idx {
		c := *calls[i]
		// A call without arguments is an empty object, as in Messages.
		c.Input = orDefault(c.Input, "{}")
		resp.Message.Calls = append(resp.Message.Calls, c)
	}
	return resp, nil
}

func openaiError(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		typ, msg := errorFields(apiErr.RawJSON())
		if msg == "" {
			msg = apiErr.Message
		}
		if typ == "" {
			typ = apiErr.Type
		}
		return &modelError{Status: apiErr.StatusCode, Type: typ, Message: msg, err: err}
	}
	return &modelError{err: err}
}
