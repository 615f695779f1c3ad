/**
 * The settings page's grace choice for a secret rotation (client secret, webhook signing secret):
 * how long the replaced secret keeps working. The page offers a few durations with the configured
 * default selected; the form field takes any duration CLIENT_SECRET_ROTATION_GRACE does.
 *
 * @example const graceMs = graceField(ctx, settings.defaultGraceMs); views.respond(ctx, 'settings', { graceChoices: graceChoices(defaultMs) });
 */
import type { Context } from 'koa';
import { ClientInputError } from '../clients/client-store.js';
import { formatGrace, parseGrace, requireGrace } from '../config/durations.js';
import { field } from './form.js';

const OFFERED = ['0', '15m', '1h', '24h', '7d'].map((text) => parseGrace(text)!);

const LABELS: Record<string, string> = {
  '0': 'no time: it stops at once (a leaked secret)',
  '15m': '15 minutes',
  '1h': '1 hour',
  '1d': '24 hours',
  '7d': '7 days',
};

/** The choices, shortest first, the default among them and selected. */
export function graceChoices(defaultMs: number): { value: string; label: string; selected: boolean }[] {
  return [...new Set([...OFFERED, defaultMs])].sort((a, b) => a - b).map((ms) => {
    const value = formatGrace(ms);
    return { value, label: `${LABELS[value] ?? value}${ms === defaultMs ? ' (default)' : ''}`, selected: ms === defaultMs };
  });
}

/** The form's `grace` in milliseconds: the default when absent; a clear error when it is not a duration. */
export function graceField(ctx: Context, defaultMs: number): number {
  const text = field(ctx, 'grace');
  if (text === '') return defaultMs;
  return requireGrace(text, (problem) => new ClientInputError(`grace ${problem}`));
}
