/**
 * Command groups whose capability has not landed yet. They are listed in `agent --help` so the
 * shape of the CLI is visible, and say plainly that they are not available yet.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { CliError } from "./io.ts";

interface LaterGroup {
  name: string;
  description: string;
  subcommands: [name: string, description: string][];
  capability: string;
}

const LATER_GROUPS: LaterGroup[] = [];

const LATER_COMMANDS: [name: string, description: string][] = [];

/** Adds the groups that are not available yet; each answers with exit code 1 and says so. */
export function addLaterCommands(program: Command): void {
  for (const group of LATER_GROUPS) {
    // A group that exists already (mcp) only gets its missing subcommands.
    const existing = program.commands.find((command) => command.name() === group.name) as
      | Command
      | undefined;
    const command = existing ??
      program.command(group.name).description(`${group.description} (not available yet)`);
    for (const [name, description] of group.subcommands) {
      command.command(name).description(`${description} (not available yet)`).allowUnknownOption()
        .allowExcessArguments()
        .action(() => notYet(`${group.name} ${name}`, group.capability));
    }
  }
  for (const [name, description] of LATER_COMMANDS) {
    program.command(name).description(`${description} (not available yet)`).allowUnknownOption()
      .allowExcessArguments().action(() => notYet(name, "agent runs"));
  }
}

function notYet(command: string, capability: string): never {
  throw new CliError(
    `\`agent ${command}\` is not available yet: ${capability} has not landed in this version.`,
  );
}
