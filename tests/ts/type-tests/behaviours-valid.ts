// @manifest behaviours
// Must compile: an approval handler that narrows on the tool, typed partial arguments, and
// handlers that listen to their abort signal.
import { createToolDispatcher, type ApprovalRequest, type ToolSocket } from "./tools.js";

declare const socket: ToolSocket;
declare function ask(question: string, signal: AbortSignal): Promise<boolean>;

async function approve(request: ApprovalRequest) {
  switch (request.name) {
    case "delete_account":
      return ask(`Delete ${request.arguments.user}?`, request.signal);
    case "checkout": {
      const total: number = request.arguments.total;
      const skus = (request.arguments.items ?? []).map((item) => item.sku);
      return (await ask(`Pay ${total} for ${skus.join(", ")}?`, request.signal))
        ? true
        : { approved: false, reason: "The user said no." };
    }
  }
}

createToolDispatcher(
  socket,
  {
    checkout: async (args, call) => {
      call.signal.throwIfAborted();
      return { paid: args.total };
    },
    show_card: (args) => ({ shown: args.title }),
    play_video: (_args, call) =>
      new Promise((resolve) => call.signal.addEventListener("abort", () => resolve({ stopped: true }))),
  },
  {
    approve,
    partialArguments: {
      show_card: (partial, call) => {
        const title: string | undefined = partial.title;
        const firstTag: string | undefined = partial.tags?.[0];
        void [title, firstTag, call.callId];
      },
    },
  },
);
