// Command-line options of the load tools: node's parseArgs, plus `--help` listing the options
// with their defaults, and a wrong option or value answered with one line and exit code 2
// instead of a stack trace.
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Parsed<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;

/** `parseArgs(config)` for a tool run from the command line; see the file comment. */
export function cliArgs<T extends ParseArgsConfig>(config: T): Parsed<T> {
  const tool = path.basename(process.argv[1] ?? 'tool');
  const args = config.args ?? process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(usage(tool, config));
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) throw err;
    process.stderr.write(`${tool}: ${(err as Error).message}\nrun with --help for the options; loadtest/README.md describes each tool\n`);
    process.exit(2);
  }
}

/** The options of `config`, one a line, with their defaults. */
export function usage(tool: string, config: ParseArgsConfig): string {
  const lines = Object.entries(config.options ?? {}).map(([name, o]) => {
    const value = o.type === 'string' ? ` <${name}>` : '';
    const fallback = o.default === undefined ? '' : `  (default ${JSON.stringify(o.default)})`;
    return `  --${name}${value}${o.multiple ? ' ...' : ''}${fallback}`;
  });
  return `usage: node ${tool} [options]\n${lines.join('\n')}\n  --help\nloadtest/README.md describes each tool.\n`;
}
