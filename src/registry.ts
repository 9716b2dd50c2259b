/**
 * What one worker knows: tools, agents and models by name. Built from the config's
 * modules and declarative entries; the activities look everything up here.
 */
import { KeelError } from './core/errors';
import type { Agent, Model, Tool } from './define';

/** A tool, agent or model definition. */
export type Definition = Tool | Agent | Model;

/** True for an object made by defineTool / defineAgent / defineModel. */
export function isDefinition(value: unknown): value is Definition {
  if (typeof value !== 'object' || value === null) return false;
  const { kind, name } = value as { kind?: unknown; name?: unknown };
  return (kind === 'tool' || kind === 'agent' || kind === 'model') && typeof name === 'string';
}

/** Tools, agents and models by name. */
export class Registry {
  readonly tools = new Map<string, Tool>();
  readonly agents = new Map<string, Agent>();
  readonly models = new Map<string, Model>();
  private readonly closers: Array<() => Promise<void>> = [];

  /** Registers what `close` releases (the connections to MCP servers). */
  onClose(close: () => Promise<void>): this {
    this.closers.push(close);
    return this;
  }

  /** Releases what the registry's tools hold open (call it when the worker has stopped). */
  async close(): Promise<void> {
    await Promise.all(this.closers.splice(0).map((close) => close()));
  }

  /** Registers definitions; a second, different definition under a taken name is an error. */
  add(...definitions: Definition[]): this {
    for (const definition of definitions) {
      const table = this.tableOf(definition);
      const existing = table.get(definition.name);
      if (existing && existing !== definition) {
        throw new KeelError('ALREADY_EXISTS', `${definition.kind} "${definition.name}" is registered twice`);
      }
      table.set(definition.name, definition);
      if (definition.kind === 'agent') {
        for (const tool of definition.tools) if (typeof tool !== 'string') this.add(tool);
      }
    }
    return this;
  }

  /** Registers every definition among a module's exports. */
  addModuleExports(exports: Record<string, unknown>): this {
    const seen = new Set<unknown>();
    for (const value of Object.values(exports)) {
      const candidates = Array.isArray(value) ? value : [value];
      for (const candidate of candidates) {
        if (isDefinition(candidate) && !seen.has(candidate)) {
          seen.add(candidate);
          this.add(candidate);
        }
      }
    }
    return this;
  }

  private tableOf(definition: Definition): Map<string, Definition> {
    switch (definition.kind) {
      case 'tool':
        return this.tools;
      case 'agent':
        return this.agents;
      case 'model':
        return this.models;
    }
  }
}
