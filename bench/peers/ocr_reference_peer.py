"""The OCR workload on the reference implementation (`rayorch` 0.1.1 on Ray), on the project's
own stage classes (rayorch_cpp.workloads.ocr_pdf.stages), with the project's resources.

The reference's API has the same structural operations as this project's (expand, broadcast,
reduce with ordered membership, several outputs per Call), so the pipeline is the project's
OcrPdf written with the reference's RayModules: each stage a pool of persistent Ray actors
with the same replicas, batch sizes and CPUs. The whole input is one input batch (the
reference's default, which lets every stage overlap). The reference returns every output
when run() returns, so the first document's time is the end of the run.
"""

import ocr_common

args = ocr_common.parse_args(__doc__)

import importlib.metadata  # noqa: E402

import ray  # noqa: E402
import rayorch as ro  # noqa: E402

from rayorch_cpp.workloads.ocr_pdf import stages  # noqa: E402

ocr_common.start_local_ray(args.ray_cpus)
paths = ocr_common.corpus_paths(args.corpus)


class LoggedRecognizeLines(stages.RecognizeLines):
    """The project's RecognizeLines, logging each call's lines."""

    def __init__(self, events_dir):
        super().__init__()
        self.log = ocr_common.CallLog(events_dir)

    def run(self, lines):
        self.log.call(len(lines))
        return super().run(lines)


class OcrPdf(ro.Pipeline):
    def __init__(self):
        config = stages.PipelineConfig()

        def module(udf, options, **ray_options):
            return ro.RayModule(udf).ray_options(
                replicas=options.replicas,
                batch_size=options.batch_size,
                num_cpus=options.num_cpus,
                **ray_options,
            )

        recognize = stages.StageOptions(
            replicas=args.recognize_replicas,
            batch_size=args.recognize_batch,
            num_cpus=args.recognize_cpus,
        )
        detect = stages.StageOptions(replicas=args.detect_replicas)
        self.open = module(stages.OpenPdf, config.open).returns(2)
        self.render = module(stages.RenderPage, config.render).pre_init(args.dpi)
        self.detect = module(stages.DetectLines, detect).pre_init(config.detect_side).returns(2)
        self.recognize = module(LoggedRecognizeLines, recognize).pre_init(args.events_dir)
        self.join = module(stages.JoinLines, config.join)
        self.assemble = module(stages.AssembleMarkdown, config.assemble)

    def forward(self, path):
        page_numbers, info = self.open(path)
        page = ro.F.expand(page_numbers)
        image = self.render(ro.F.broadcast(path, like=page), page)
        crops, rows = self.detect(image)
        text = self.recognize(ro.F.expand(crops))
        page_text = self.join(ro.F.reduce(text), rows)
        return self.assemble(ro.F.reduce(page_text), info)


clock = ocr_common.Clock()
executor = ro.Executor(OcrPdf())  # builds every actor pool: inside the clock
result = executor.run(paths)
documents = {}
for path, out in zip(paths, result.outputs):
    clock.document_done()
    if isinstance(out, stages.Markdown):
        documents[path] = out.text
executor.close()
ocr_common.write_result(args, "reference", importlib.metadata.version("rayorch"), clock, documents)
ray.shutdown()
