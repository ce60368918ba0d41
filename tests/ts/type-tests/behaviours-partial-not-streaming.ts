// @manifest behaviours
// @expect TS2353 'checkout' does not exist in type 'PartialArgumentHandlers'
import { createToolDispatcher, type ToolSocket } from "./tools.js";

declare const socket: ToolSocket;

// Only tools with `stream_arguments: true` have partial arguments.
createToolDispatcher(
  socket,
  { checkout: () => ({ paid: true }), show_card: () => undefined, play_video: () => undefined },
  { approve: () => true, partialArguments: { checkout: () => undefined } },
);
