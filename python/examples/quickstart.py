import rayorch_cpp as ro  # the reference's examples run with only this line changed


class Pages:  # one document -> its ordered pages
    def run(self, page_counts):
        return [[f"page {p}" for p in range(n)] for n in page_counts]


class Ocr:  # batched across documents; one instance per actor
    def run(self, pages):
        return [p.upper() for p in pages]


class Join:  # the pages of one document, in page order
    def run(self, docs):
        return ["".join(pages) for pages in docs]


class Documents(ro.Pipeline):
    def __init__(self):
        self.pages = ro.RayModule(Pages)
        self.ocr = ro.RayModule(Ocr).ray_options(replicas=4, batch_size=32)
        self.join = ro.RayModule(Join)

    def forward(self, n):
        return self.join(ro.F.reduce(self.ocr(ro.F.expand(self.pages(n)))))


print(Documents().compile().explain_text())
with ro.Executor(Documents()) as ex:  # the embedded local backend, no Ray
    print(ex.run([3, 1, 0], input_batch_size=2).outputs)  # ['PAGE 0PAGE 1PAGE 2', 'PAGE 0', '']
    for row, doc in ex.stream([3, 1, 0]):  # each document as soon as it is done
        print(row, doc)
