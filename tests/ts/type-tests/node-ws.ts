// @manifest edge
// @flags --types node,ws
// Must compile: the `ws` package's client is a ToolSocket; names that are not identifiers work.
import WebSocket from "ws";
import { createToolDispatcher, type EditTreeResult } from "./tools.js";

const socket = new WebSocket("ws://127.0.0.1:8787/");
createToolDispatcher(socket, {
  "show-banner": (args) => {
    const text: string = args["text with spaces"];
    const level: "warn" | undefined = args.tone?.level;
    return `${text}${level ?? ""}${args["kebab-case"] ?? 0}`;
  },
  edit_tree: async (args): Promise<EditTreeResult> => {
    const first: string | undefined = args.path?.[0];
    const depth = (node: typeof args.root): number => 1 + Math.max(0, ...node.children.map(depth));
    return first === undefined ? { ok: false, reason: null } : { ok: true, node: { id: `${first}:${depth(args.root)}` } };
  },
  ping: () => "pong",
});
