package cofold

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicAPI speaks the Messages API through the official SDK.
type anthropicAPI struct {
	client anthropic.Client
}

func newAnthropic(p ProviderConfig, retries int) *anthropicAPI {
	opts := []option.RequestOption{
		// Only the config speaks: no ANTHROPIC_* variable or profile of the
		// daemon's environment is read behind it.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(p.BaseURL),
		option.WithMaxRetries(retries),
		option.WithAPIKey(orDefault(p.apiKey(), "none")),
	}
	for k, v := range p.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &anthropicAPI{client: anthropic.NewClient(opts...)}
}

func (a *anthropicAPI) listModels(ctx context.Context) ([]string, error) {
	page, err := a.client.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range page.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

// anthropicMessages builds the Messages history. Tool results and any
// text after them go in user messages, as the API wants.
func anthropicMessages(msgs []Message) []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case "user":
			blocks := []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(m.Text)}
			for _, im := range m.Images {
				blocks = append(blocks, anthropic.NewImageBlockBase64(im.MimeType, base64.StdEncoding.EncodeToString(im.Data)))
			}
			out = append(out, anthropic.NewUserMessage(blocks...))
		case "assistant":
			var blocks []anthropic.ContentBlockParamUnion
			if m.Reasoning != "" && m.Signature != "" {
				blocks = append(blocks, anthropic.NewThinkingBlock(m.Signature, m.Reasoning))
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.Calls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, inputObject(c.Input), c.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
			}
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		case "tool":
			var blocks []anthropic.ContentBlockParamUnion
			for _, r := range m.Results {
				blocks = append(blocks, anthropic.NewToolResultBlock(r.CallID, r.Output, r.IsError))
			}
			out = append(out, anthropic.NewUserMessage(blocks...))
		}
	}
	return out
}

// inputObject is a call's input as the object the API wants back; input
// the model wrote malformed goes back as an empty object (its error went
// to the model as the call's result).
func inputObject(s string) any {
	var v map[string]any
	if json.Unmarshal([]byte(s), &v) != nil || v == nil {
		return map[string]any{}
	}
	return v
}

func anthropicTools(specs []toolSpec) []anthropic.ToolUnionParam {
	out := make([]anthropic.ToolUnionParam, 0, len(specs))
	for _, s := range specs {
		out = append(out, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        s.Name,
			Description: anthropic.String(s.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: s.Properties, Required: s.Required},
		}})
	}
	return out
}

func (a *anthropicAPI) stream(ctx context.Context, req request, s sink) (response, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(maxTokens),
		Messages:  anthropicMessages(req.Messages),
		Tools:     anthropicTools(req.Tools),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if budget := thinkingBudget(req.Effort, maxTokens); budget > 0 {
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(budget))
	}
	st := a.client.Messages.NewStreaming(ctx, params)
	defer st.Close()

	resp := response{Message: Message{Role: "assistant"}}
	var (
		text, think []byte
		// blockCall maps a content block index to its call.
		blockCall = map[int64]int{}
	)
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "message_start":
			resp.InputTokens = int(ev.Message.Usage.InputTokens)
			resp.CacheRead = int(ev.Message.Usage.CacheReadInputTokens)
			resp.OutputTokens = int(ev.Message.Usage.OutputTokens)
		case "message_delta":
			resp.OutputTokens = int(ev.Usage.OutputTokens)
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				blockCall[ev.Index] = len(resp.Message.Calls)
				resp.Message.Calls = append(resp.Message.Calls, Call{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
				s.toolStart(ev.ContentBlock.ID, ev.ContentBlock.Name)
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				text = append(text, ev.Delta.Text...)
				s.text(ev.Delta.Text)
			case "thinking_delta":
				think = append(think, ev.Delta.Thinking...)
				s.reasoning(ev.Delta.Thinking)
			case "signature_delta":
				resp.Message.Signature += ev.Delta.Signature
			case "input_json_delta":
				if i, ok := blockCall[ev.Index]; ok {
					resp.Message.Calls[i].Input += ev.Delta.PartialJSON
					s.toolInput(ev.Delta.PartialJSON)
				}
			}
		}
	}
	if err := st.Err(); err != nil {
		return resp, anthropicError(err)
	}
	for i := range resp.Message.Calls {
		if resp.Message.Calls[i].Input == "" {
			resp.Message.Calls[i].Input = "{}"
		}
	}
	resp.Message.Text = string(text)
	resp.Message.Reasoning = string(think)
	return resp, nil
}

// thinkingBudget turns a reasoning effort into a thinking budget that
// fits under maxTokens; 0 is no thinking.
func thinkingBudget(effort string, maxTokens int) int {
	var b int
	switch effort {
	case "low":
		b = 1024
	case "medium":
		b = 4096
	case "high":
		b = 16384
	default:
		return 0
	}
	if b >= maxTokens {
		b = maxTokens / 2
	}
	if b < 1024 {
		return 0
	}
	return b
}

func anthropicError(err error) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		typ, msg := errorFields(apiErr.RawJSON())
		if msg == "" {
			msg = apiErr.Message
		}
		if typ == "" {
			typ = string(apiErr.Type())
		}
		return &modelError{Status: apiErr.StatusCode, Type: typ, Message: msg, err: err}
	}
	return &modelError{err: err}
}
