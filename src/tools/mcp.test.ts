import { describe, expect, it } from 'vitest';
import { toolResponseWire } from '../core/messages';
import { outputOf } from './mcp';

describe('MCP call results as tool outputs', () => {
  it('keeps text as text and structured content as it is', () => {
    expect(
      outputOf({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('a\nb');
    expect(outputOf({ content: [{ type: 'text', text: 'x' }], structuredContent: { n: 1 } })).toEqual({ n: 1 });
  });

  it('turns image content into media parts with a data URI, other content kept as sent', () => {
    const resource = { type: 'resource', resource: { uri: 'file:///a', text: 'hi' } };
    const output = outputOf({ content: [{ type: 'text', text: 'the chart' }, { type: 'image', data: 'iVBORw0=', mimeType: 'image/png' }, resource] });
    expect(output).toEqual({
      content: [{ text: 'the chart' }, { media: { url: 'data:image/png;base64,iVBORw0=', contentType: 'image/png' } }, resource],
    });
    // What providers send: the text (other entries as JSON) and the media apart, no base64 in the text.
    const wire = toolResponseWire({ name: 'chart', output });
    expect(wire.media).toEqual([{ url: 'data:image/png;base64,iVBORw0=', contentType: 'image/png' }]);
    expect(wire.text).toBe(`the chart\n${JSON.stringify(resource)}`);
    expect(wire.text).not.toContain('iVBORw0=');
  });

  it('leaves outputs without media as JSON text', () => {
    expect(toolResponseWire({ name: 'x', output: { content: [{ text: 'a' }] } })).toEqual({ text: '{"content":[{"text":"a"}]}', media: [] });
    expect(toolResponseWire({ name: 'x', output: 'plain' })).toEqual({ text: 'plain', media: [] });
  });
});
