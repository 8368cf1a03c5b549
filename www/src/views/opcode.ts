// Opcode names in tables, search hits and details. The core names an opcode byte from the table of
// mnemonics learned from AWS's exports (crate/src/ntff/opcode.rs, docs/format/ntff.md §7); a byte no
// export names stays raw (`0xA7`) and is shown here with a note saying why, never a guessed name.

import { h } from '../dom.ts';
import { cell } from '../format.ts';

/** A raw opcode byte as the core writes it for a byte without a known mnemonic. */
const RAW = /^0x[0-9A-F]{2}$/;

/** True when `op` is a raw byte (`0xA7`), not a mnemonic. */
export function isRawOpcode(op: unknown): boolean {
  return typeof op === 'string' && RAW.test(op);
}

/** Why a raw byte has no name (tooltip of the note). */
export function rawOpcodeNote(op: string): string {
  return `Opcode byte ${op}: no mnemonic is known for it. Names come from the runtime's opcode table as learned from AWS's JSON exports (the NEFF does not name runtime opcodes); no export in the samples executes ${op}, so the raw byte is shown instead of a guess.`;
}

/** An opcode cell: the mnemonic, or the raw byte with an "unnamed" note. */
export function opcodeCell(op: unknown): Node {
  if (!isRawOpcode(op)) return document.createTextNode(cell(op));
  const text = String(op);
  return h('span', { class: 'opcode-raw', title: rawOpcodeNote(text), 'data-raw-opcode': text }, text, h('span', { class: 'note' }, ' (unnamed byte)'));
}
