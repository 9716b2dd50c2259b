/**
 * What a terminal shows for text written to it: the lines left on screen once carriage returns,
 * cursor moves and erasures (the ANSI sequences readline writes) are applied. Colours are dropped.
 */
export function screenLines(text: string): string[] {
  const lines: string[] = [''];
  let row = 0;
  let column = 0;
  const put = (char: string) => {
    const line = lines[row]!.padEnd(column, ' ');
    lines[row] = line.slice(0, column) + char + line.slice(column + 1);
    column += 1;
  };
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (char === '\r') column = 0;
    else if (char === '\n') {
      row += 1;
      column = 0;
      while (lines.length <= row) lines.push('');
    } else if (char === '\x1b' && text[index + 1] === '[') {
      const match = /^\x1b\[([\d;]*)([A-Za-z])/.exec(text.slice(index))!;
      index += match[0].length - 1;
      const count = Number(match[1] || '0');
      const code = match[2];
      if (code === 'G') column = Math.max(0, (count || 1) - 1);
      else if (code === 'K') lines[row] = count === 2 ? '' : count === 1 ? ' '.repeat(column) + lines[row]!.slice(column) : lines[row]!.slice(0, column);
      else if (code === 'J') {
        lines.splice(row + 1);
        lines[row] = lines[row]!.slice(0, column);
      } else if (code === 'A') row = Math.max(0, row - (count || 1));
      else if (code === 'B') row += count || 1;
      else if (code === 'C') column += count || 1;
      else if (code === 'D') column = Math.max(0, column - (count || 1));
      while (lines.length <= row) lines.push('');
    } else put(char);
  }
  return lines.map((line) => line.trimEnd());
}
