/**
 * `coop explain` against what a real turn then does: for the owner in a direct chat and in a
 * group, Bob (full), Carol (familiar), an unknown sender and a person paired with `coop
 * pairing approve` (by address and by name), the report's tools are exactly the
 * ones the model server was offered, its trust the one the system prompt names, its memory
 * stores the ones `memory_search` searched, and its sandbox policy and limits exactly what the
 * real sandbox was given and reported (run as root and unprivileged).
 */
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import type { IncomingMessage } from "../../src/gateway/turn_handler.ts";
import { type ExplainReport, runExplain } from "../../src/cli/explain_command.ts";
import { exec, type ExecResult, type SandboxPolicyInput } from "../../src/sandbox/mod.ts";
import { commandResult } from "../fixtures/command_result.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { pairPerson } from "../fixtures/paired_person.ts";
import type { TrustLevel } from "../../src/trust/trust_level.ts";

const format = ANTHROPIC;

function configText(baseUrl: string): string {
  return `
[agent]
model = "scripted/test-model"
workspace = "ws"
state_dir = "state"

[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default", "telegram:111"]

[[users]]
name = "bob"
trust = "full"
match = ["http:bob"]
[users.sandbox]
memory = "256M"
pids_limit = 64
network = "proxy"
allow_domains = ["example.com"]

[[users]]
name = "carol"
trust = "familiar"
match = ["http:carol"]

[[groups]]
name = "family"
match = ["telegram:-100"]
trust = "inner"

[sandbox]
timeout = "20s"

[[providers]]
name = "scripted"
kind = "anthropic"
base_url = "${baseUrl}"
`;
}

interface Case {
  label: string;
  explain: string[];
  message: Omit<IncomingMessage, "text">;
  /** A person paired (`coop pairing approve`) before explain and the turn run. */
  paired?: { channel: string; sender: string; name: string; trust: TrustLevel };
}

const ERIN = { channel: "telegram", sender: "777", name: "erin", trust: "inner" } as const;

const CASES: Case[] = [
  {
    label: "the owner in a direct chat",
    explain: ["--user", "alice", "--channel", "terminal"],
    message: { channel: "terminal", sender: "default" },
  },
  {
    label: "the owner in a group",
    explain: ["--user", "alice", "--channel", "telegram", "--group", "-100"],
    // Addressed: a group message that does not address the agent is kept as context, no turn.
    message: { channel: "telegram", sender: "111", group: "-100", addressed: true },
  },
  {
    label: "Bob (full)",
    explain: ["--user", "bob"],
    message: { channel: "http", sender: "bob" },
  },
  {
    label: "Carol (familiar)",
    explain: ["--user", "carol"],
    message: { channel: "http", sender: "carol" },
  },
  {
    label: "an unknown sender",
    explain: ["--channel", "http", "--sender", "zed"],
    message: { channel: "http", sender: "zed" },
  },
  {
    label: "a paired person by address",
    explain: ["--channel", "telegram", "--sender", "777"],
    message: { channel: "telegram", sender: "777" },
    paired: ERIN,
  },
  {
    label: "a paired person by name",
    explain: ["--user", "erin"],
    message: { channel: "telegram", sender: "777" },
    paired: ERIN,
  },
];

async function explain(file: string, args: string[]): Promise<ExplainReport> {
  let out = "";
  const code = await runExplain([...args, "--config", file, "--json"], {
    probe: () => Promise.resolve({ available: true, detail: "not probed in this test" }),
    write: (text) => out += text,
  });
  assertEquals(code, 0, out);
  return JSON.parse(out);
}

for (const c of CASES) {
  sandboxTest(`explain matches a real turn: ${c.label}`, async () => {
    const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-explain-" }));
    // The sandbox may map to an unprivileged uid; let it traverse to the workspace.
    await Deno.chmod(base, 0o755);
    const script = [
      format.toolCall("t1", "bash", ['{"command": "echo ran"}']),
      format.toolCall("t2", "memory_search", ['{"query": "anything"}']),
      format.text(["done"]),
    ];
    try {
      await withScriptedServer(script, async (server) => {
        const file = join(base, "coop.toml");
        const text = configText(server.url);
        await Deno.writeTextFile(file, text);
        if (c.paired) pairPerson(join(base, "state"), c.paired);
        const report = await explain(file, c.explain);
        if (c.paired) {
          assertEquals(report.identity.principal, c.paired.name, "the paired person, not public");
          assertEquals(report.trust.effective, c.paired.trust);
        }

        const sandboxed: Array<{ policy: SandboxPolicyInput; result: ExecResult }> = [];
        const host: string[] = [];
        const gateway = Gateway.open(parseConfig(text, file, base), {
          executor: {
            env: { PATH: "/usr/bin:/bin" },
            // The real sandbox, recording what it was given and what it reported.
            sandbox: async (policy, argv, options) => {
              const result = await exec(policy, argv, options);
              sandboxed.push({ policy, result });
              return result;
            },
            host: (command) => {
              host.push(command);
              return Promise.resolve(commandResult({ stdout: "ran\n" }));
            },
          },
        });
        let outcome;
        try {
          outcome = await gateway.handle({ ...c.message, text: "hello" });
        } finally {
          gateway.close();
        }
        assertEquals(outcome.reply, "done");

        // Tools: what the model server was offered, in order.
        const offered = format.toolNames(server.requests[0].body);
        assertEquals(offered, report.tools.map((t) => t.name), "tools offered");
        // Trust: the system prompt names the effective trust.
        assertMatch(
          String(server.requests[0].body.system),
          new RegExp(`\\(trust: ${report.trust.effective}\\)`),
        );
        // Where bash ran: host, sandbox, or nowhere — and under which policy and limits.
        const bash = outcome.tools[0];
        assertEquals(bash.name, "bash");
        assertEquals(bash.sandboxed, report.sandbox.commandsRun === "sandbox");
        if (report.sandbox.commandsRun === "sandbox") {
          assertEquals(sandboxed.length, 1);
          assertEquals(host.length, 0);
          assertEquals(sandboxed[0].result.stdout, "ran\n", sandboxed[0].result.stderr);
          assertEquals(sandboxed[0].policy, report.sandbox.policy, "sandbox policy");
          assertEquals(sandboxed[0].result.limits, report.sandbox.limits, "limits and their path");
        } else if (report.sandbox.commandsRun === "host") {
          assertEquals([host.length, sandboxed.length], [1, 0]);
          assertEquals(report.sandbox.policy, undefined);
        } else {
          assertEquals([host.length, sandboxed.length], [0, 0]);
          assertEquals(bash.exitCode, null);
        }
        // Memory: the stores memory_search searched are the ones the report says it reads.
        const searchResult = JSON.stringify(format.messages(server.requests[2].body).at(-1));
        const searched = /searched: ([a-z, ]+)\)/.exec(searchResult)?.[1].split(", ") ?? [];
        assertEquals(searched, report.memory.read, "memory stores read");
        if (report.memory.read.length === 0) {
          assertMatch(searchResult, /not permitted|not available/);
        }
        assert(report.sandboxProbe === null || report.sandbox.commandsRun === "sandbox");
      });
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  });
}
