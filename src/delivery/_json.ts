/**
 * Small helpers for untrusted JSON values: type tests, and showing a value in a message without
 * letting it flood the message.
 *
 * @module
 */
import { cut } from "../home/text.ts";

/** Whether `value` is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `text` parsed as JSON, or `undefined` when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `value` as JSON, cut to `max` characters (the last one `…`): enough to recognise it. */
export function shownValue(value: unknown, max: number): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return cut(text, max);
}
