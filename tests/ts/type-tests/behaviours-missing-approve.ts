// @manifest behaviours
// @expect TS2554 Expected 3 arguments, but got 2
import { createToolDispatcher, type ToolSocket } from "./tools.js";

declare const socket: ToolSocket;

// Tools need approval, so the dispatcher cannot be made without a way to ask.
createToolDispatcher(socket, {
  checkout: () => ({ paid: true }),
  show_card: () => undefined,
  play_video: () => undefined,
});
