"""The data-loading part of the modelled training step: the DataLoader's next batch (loaded on the training
thread with num_workers=0, or waited for from the workers), preprocessing on the training thread, and the
batch's copy to the GPU."""

from __future__ import annotations

from scenario_loop_base import TrainingLoopBase
from scenario_program import IMAGE, IMAGE_BYTES_PER_SAMPLE
from scenario_sim import MAIN_TID


class DataLoading(TrainingLoopBase):
    def next_batch(self) -> None:
        sim = self.sim
        if self.p.num_workers == 0:
            name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        else:
            name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
        with sim.py("torch/utils/data/dataloader.py(701): __next__", overhead_us=3.0):
            with sim.op(name, cat="user_annotation", overhead_us=8.0):
                with sim.py("torch/utils/data/dataloader.py(757): _next_data" if self.p.num_workers == 0 else
                            "torch/utils/data/dataloader.py(1425): _next_data", overhead_us=3.0):
                    if self.p.num_workers == 0:
                        self.load_batch_in_process()
                    else:
                        self.wait_for_worker()

    def preprocess_batch(self) -> None:
        """images = preprocess(images) on the training thread: uint8 -> float, normalise, resize, all CPU ops
        that launch nothing while the GPU has run dry."""
        sim = self.sim
        with sim.py("pipeline.py(129): preprocess", overhead_us=6.0):
            with sim.op("aten::to", extra_args=self.shapes([[self.batch, 3, 144, 144], [], [], [], []],
                                                         ["unsigned char", "Scalar", "Scalar", "Scalar", "Scalar"])):
                with sim.op("aten::_to_copy"):
                    with sim.op("aten::copy_"):
                        sim.cpu(640.0)
            with sim.op("aten::sub_"):
                sim.cpu(380.0)
            with sim.op("aten::div_"):
                sim.cpu(410.0)
            with sim.py("torch/nn/functional.py(3868): interpolate", overhead_us=4.0):
                with sim.op("aten::upsample_bilinear2d"):
                    sim.cpu(1250.0)

    def load_batch_in_process(self) -> None:
        """num_workers=0: decoding and augmenting every sample of the batch on the training thread."""
        sim = self.sim
        with sim.py("torch/utils/data/_utils/fetch.py(46): fetch", overhead_us=4.0):
            with sim.py("torch/utils/data/_utils/fetch.py(51): <listcomp>", overhead_us=2.0):
                for _ in range(8):  # the Python tracer keeps only some of the 64 __getitem__ calls
                    with sim.py("torchvision/datasets/folder.py(229): __getitem__", overhead_us=3.0):
                        with sim.py("PIL/Image.py(3218): open", overhead_us=1.0):
                            sim.cpu(310.0)
                        with sim.py("torchvision/transforms/transforms.py(94): __call__", overhead_us=1.0):
                            with sim.op("aten::to"):
                                sim.cpu(60.0)
                            with sim.op("aten::div"):
                                sim.cpu(45.0)
                            with sim.op("aten::sub"):
                                sim.cpu(40.0)
                    sim.cpu(330.0)  # the samples whose frames were not recorded
            with sim.py("torch/utils/data/_utils/collate.py(316): default_collate", overhead_us=5.0):
                with sim.op("aten::stack", extra_args=self.shapes([[]], ["TensorList"])):
                    with sim.op("aten::cat"):
                        sim.cpu(900.0)
            if self.p.pin_memory:
                with sim.py("torch/utils/data/_utils/pin_memory.py(61): pin_memory", overhead_us=3.0):
                    with sim.op("aten::pin_memory"):
                        with sim.op("aten::_pin_memory"):
                            sim.cpu(420.0)

    def wait_for_worker(self) -> None:
        """num_workers>0: the batch is ready or arrives while the GPU still has queued work. Workers deliver
        batches at the rate the loop consumes them, so the host waits while the GPU is more than
        ~1.3 ms ahead of it (steady state of a producer-consumer queue)."""
        sim = self.sim
        with sim.py("torch/utils/data/dataloader.py(1391): _get_data", overhead_us=3.0):
            with sim.py("torch/utils/data/dataloader.py(1244): _try_get_data", overhead_us=3.0):
                lead = sim.stream_free - sim.now[MAIN_TID]
                sim.cpu(35.0)
                if lead > 1_300_000:
                    sim.now[MAIN_TID] += lead - 1_300_000 + sim.jitter(20_000)

    def copy_batch(self) -> None:
        sim = self.sim
        for nbytes, dims, dtype in ((self.batch * IMAGE_BYTES_PER_SAMPLE, [self.batch, *IMAGE], "float"), (self.batch * 8, [self.batch], "long int")):
            with sim.op("aten::to", extra_args=self.shapes([dims, [], [], [], [], []],
                                                          [dtype, "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])):
                with sim.op("aten::_to_copy"):
                    with sim.op("aten::empty_strided", overhead_us=3.0):
                        self.allocate(nbytes)
                    with sim.op("aten::copy_"):
                        sim.memcpy("HtoD", "Pinned" if self.p.pin_memory else "Pageable", nbytes)
                        if not self.p.non_blocking:  # copy_ without non_blocking: memcpy_and_sync
                            sim.stream_synchronize()
