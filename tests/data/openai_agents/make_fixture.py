"""Make traces.jsonl: two real OpenAI Agents SDK runs (openai-agents 0.24.0, MIT) with a scripted model, no network.

Run with the SDK installed in a separate environment: ``python make_fixture.py traces.jsonl``. Every item is what
the SDK's BackendSpanExporter would send to the traces ingest endpoint (``trace.export()`` / ``span.export()``),
written one per line in the order the processor receives them (traces at start, spans at end).
"""

import asyncio
import json
import sys


def main(path):
    """Run both agents and write the export (the SDK is imported here: pytest collects this file)."""
    from agents import Agent, ModelResponse, Runner, Usage, function_tool, trace
    from agents.models.interface import Model
    from agents.tracing import TracingProcessor, generation_span, set_trace_processors
    from agents.usage import InputTokensDetails, OutputTokensDetails, model_usage_to_span_usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class Writer(TracingProcessor):
        """Writes each exported trace and span as one JSON line."""

        def __init__(self, path):
            self.fh = open(path, "w")

        def on_trace_start(self, t):
            self._write(t.export())

        def on_trace_end(self, t):
            pass

        def on_span_start(self, s):
            pass

        def on_span_end(self, s):
            self._write(s.export())

        def _write(self, item):
            if item is not None:
                self.fh.write(json.dumps(item) + "\n")

        def shutdown(self):
            self.fh.close()

        def force_flush(self):
            self.fh.flush()


    def call(name, args, cid):
        return ResponseFunctionToolCall(type="function_call", name=name, arguments=json.dumps(args), call_id=cid, id="fc_" + cid)


    def say(text):
        return ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                     content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


    def usage(i, o, cached=0, reasoning=0):
        return Usage(requests=1, input_tokens=i, output_tokens=o, total_tokens=i + o,
                     input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
                     output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning))


    class Scripted(Model):
        """Returns the scripted responses in order."""

        def __init__(self, script):
            self.script = list(script)

        async def get_response(self, *args, **kwargs):
            output, use = self.script.pop(0)
            # a generation span with the call's usage, as the SDK's own OpenAI models write one
            with generation_span(model="scripted-model", usage=model_usage_to_span_usage(use)):
                pass
            return ModelResponse(output=output, usage=use, response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError


    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return {"src/app.py": "def add(a, b):\n    return a - b\n"}[path]


    @function_tool
    def run_tests(target: str) -> str:
        """Run the tests."""
        if target == "missing":
            raise RuntimeError("no such test target")
        return "1 failed"


    async def run(path):
        set_trace_processors([Writer(path)])
        # run 1: a triage agent hands off to a fixer, which reads a file, runs tests twice (one error), then answers
        fixer_model = Scripted([
            ([call("read_file", {"path": "src/app.py"}, "c1")], usage(120, 18, cached=64)),
            ([call("run_tests", {"target": "missing"}, "c2"), call("run_tests", {"target": "tests"}, "c3")],
             usage(180, 30, reasoning=12)),
            ([say("The bug is a - b; it should be a + b.")], usage(240, 15)),
        ])
        fixer = Agent(name="fixer", instructions="Fix bugs.", tools=[read_file, run_tests], model=fixer_model)
        triage_model = Scripted([([call("transfer_to_fixer", {}, "h1")], usage(50, 7))])
        triage = Agent(name="triage", instructions="Route.", handoffs=[fixer], model=triage_model)
        with trace("fix-bug", group_id="exp-1",
                   metadata={"agentab.task_id": "fix-add", "agentab.seed": "0", "agentab.outcome": "true"}):
            await Runner.run(triage, "Fix the add function.")
        # run 2: one agent, one tool call, no outcome recorded in the metadata
        solo = Agent(name="solo", instructions="Read.", tools=[read_file], model=Scripted([
            ([call("read_file", {"path": "src/app.py"}, "d1")], usage(90, 11)),
            ([say("Done.")], usage(130, 5)),
        ]))
        with trace("fix-bug", group_id="exp-1", metadata={"agentab.task_id": "fix-add", "agentab.seed": "1"}):
            await Runner.run(solo, "Read the app.")

    asyncio.run(run(path))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "traces.jsonl")
