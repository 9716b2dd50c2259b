/**
 * A form rendered from a JSON Schema (the hold's declared decision, or the held tool's output):
 * one input per property of an object schema (text, number, checkbox, or a choice for an enum;
 * JSON for anything else), or one JSON box for any other schema. The value is checked against
 * the schema in the page (@cfworker/json-schema, no eval) and each error is shown at its field;
 * `onValid` gets the value only when it passes.
 */
import { Validator, type OutputUnit } from '@cfworker/json-schema';
import { useMemo, useState } from 'preact/hooks';

type Schema = Record<string, unknown>;

interface Field {
  name: string;
  schema: Schema;
  required: boolean;
  kind: 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';
}

/** The fields of an object schema with properties (undefined: the schema is edited as one JSON value). */
function fieldsOf(schema: Schema): Field[] | undefined {
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (schema.type !== 'object' || !properties) return undefined;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(properties).map(([name, property]) => {
    const type = property.type;
    const kind: Field['kind'] = Array.isArray(property.enum)
      ? 'enum'
      : type === 'string' || type === 'number' || type === 'integer' || type === 'boolean'
        ? type
        : 'json';
    return { name, schema: property, required: required.has(name), kind };
  });
}

/** The value a field's text stands for (undefined: left empty). */
function fieldValue(field: Field, text: string | boolean | undefined): unknown {
  if (field.kind === 'boolean') return text === true;
  if (typeof text !== 'string' || text === '') return undefined;
  if (field.kind === 'number' || field.kind === 'integer') return Number.isFinite(Number(text)) ? Number(text) : text;
  if (field.kind === 'json') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  if (field.kind === 'enum') return (field.schema.enum as unknown[]).find((option) => String(option) === text) ?? text;
  return text;
}

/** Errors by field name ('' for the value as a whole), from the validator's output. */
function errorsByField(errors: OutputUnit[]): Record<string, string> {
  const found: Record<string, string> = {};
  for (const error of errors) {
    // The most specific messages are the ones that name a property or a keyword below the root.
    const [, first] = error.instanceLocation.split('/');
    const key = first === undefined ? '' : decodeURIComponent(first.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (error.keyword === 'properties' || error.keyword === '$ref' || error.keyword === 'allOf') continue;
    if (key === '' && error.keyword === 'required') {
      const missing = /"([^"]+)"/.exec(error.error)?.[1];
      if (missing) {
        found[missing] ??= 'required';
        continue;
      }
    }
    found[key] ??= error.error;
  }
  return found;
}

export function SchemaForm({
  schema,
  initial,
  submitLabel,
  testId,
  onValid,
  busy = false,
}: {
  schema: Schema;
  initial?: unknown;
  submitLabel: string;
  testId: string;
  onValid: (value: unknown) => void;
  busy?: boolean;
}) {
  const fields = useMemo(() => fieldsOf(schema), [schema]);
  const validator = useMemo(() => new Validator(schema as never, '2020-12', false), [schema]);
  const [texts, setTexts] = useState<Record<string, string | boolean>>(() => {
    const start = (initial ?? {}) as Record<string, unknown>;
    if (!fields) return { '': JSON.stringify(initial ?? {}, null, 2) };
    return Object.fromEntries(
      fields
        .filter((field) => start[field.name] !== undefined)
        .map((field) => [
          field.name,
          field.kind === 'boolean' ? start[field.name] === true : field.kind === 'json' ? JSON.stringify(start[field.name]) : String(start[field.name]),
        ]),
    );
  });
  const [errors, setErrors] = useState<Record<string, string>>({});

  const submit = (event: Event) => {
    event.preventDefault();
    let value: unknown;
    if (fields) {
      const entries = fields.map((field) => [field.name, fieldValue(field, texts[field.name])] as const).filter(([, entry]) => entry !== undefined);
      value = Object.fromEntries(entries);
    } else {
      try {
        value = JSON.parse(String(texts[''] ?? '')) as unknown;
      } catch (error) {
        setErrors({ '': `not JSON: ${(error as Error).message}` });
        return;
      }
    }
    const result = validator.validate(value);
    if (!result.valid) {
      setErrors(errorsByField(result.errors));
      return;
    }
    setErrors({});
    onValid(value);
  };

  const set = (name: string, text: string | boolean) => setTexts((current) => ({ ...current, [name]: text }));
  return (
    <form class="schema-form" data-testid={testId} onSubmit={submit} noValidate>
      {fields ? (
        fields.map((field) => (
          <label key={field.name} class={errors[field.name] ? 'field invalid' : 'field'} data-field={field.name}>
            <span class="label">
              {field.name}
              {field.required ? ' *' : ''}
              {typeof field.schema.description === 'string' ? <small> {field.schema.description}</small> : null}
            </span>
            {field.kind === 'boolean' ? (
              <input type="checkbox" name={field.name} checked={texts[field.name] === true} onChange={(e) => set(field.name, e.currentTarget.checked)} />
            ) : field.kind === 'enum' ? (
              <select name={field.name} value={String(texts[field.name] ?? '')} onChange={(e) => set(field.name, e.currentTarget.value)}>
                <option value="">—</option>
                {(field.schema.enum as unknown[]).map((option) => (
                  <option key={String(option)} value={String(option)}>
                    {String(option)}
                  </option>
                ))}
              </select>
            ) : (
              <input
                name={field.name}
                inputMode={field.kind === 'number' || field.kind === 'integer' ? 'decimal' : 'text'}
                value={String(texts[field.name] ?? '')}
                onInput={(e) => set(field.name, e.currentTarget.value)}
              />
            )}
            {errors[field.name] ? (
              <span class="error" role="alert">
                {errors[field.name]}
              </span>
            ) : null}
          </label>
        ))
      ) : (
        <label class={errors[''] ? 'field invalid' : 'field'} data-field="">
          <textarea name="value" rows={6} value={String(texts[''] ?? '')} onInput={(e) => set('', e.currentTarget.value)} />
        </label>
      )}
      {errors[''] ? (
        <span class="error" role="alert">
          {errors['']}
        </span>
      ) : null}
      <button type="submit" disabled={busy}>
        {submitLabel}
      </button>
    </form>
  );
}
