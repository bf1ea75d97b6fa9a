INFO     lightning.pytorch.utilities.rank_zero:setup.py:164 GPU available: False, used: False
INFO     lightning.pytorch.utilities.rank_zero:setup.py:167 TPU available: False, using: 0 TPU cores
INFO     lightning.pytorch.utilities.rank_zero:logger_connector.py:91 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.
INFO     lightning.pytorch.utilities.rank_zero:fit_loop.py:192 `Trainer.fit` stopped: `max_epochs=3` reached.
INFO     lightning.pytorch.utilities.rank_zero:setup.py:164 GPU available: False, used: False
INFO     lightning.pytorch.utilities.rank_zero:setup.py:167 TPU available: False, using: 0 TPU cores
INFO     lightning.pytorch.utilities.rank_zero:logger_connector.py:91 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.
INFO     lightning.pytorch.utilities.rank_zero:callback_connector.py:190 💡 Tip: For seamless cloud uploads and versioning, try installing [litmodels](https://pypi.org/project/litmodels/) to enable LitModelCheckpoint, which syncs automatically with the Lightning model registry.
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:81 Restoring states from the checkpoint path at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=5.ckpt
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:224 Restored all states from the checkpoint at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=5.ckpt
INFO     lightning.pytorch.utilities.rank_zero:fit_loop.py:192 `Trainer.fit` stopped: `max_epochs=3` reached.
INFO     lightning.pytorch.utilities.rank_zero:setup.py:164 GPU available: False, used: False
INFO     lightning.pytorch.utilities.rank_zero:setup.py:167 TPU available: False, using: 0 TPU cores
INFO     lightning.pytorch.utilities.rank_zero:logger_connector.py:91 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.
INFO     lightning.pytorch.utilities.rank_zero:callback_connector.py:190 💡 Tip: For seamless cloud uploads and versioning, try installing [litmodels](https://pypi.org/project/litmodels/) to enable LitModelCheckpoint, which syncs automatically with the Lightning model registry.
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:81 Restoring states from the checkpoint path at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=12.ckpt
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:224 Restored all states from the checkpoint at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=12.ckpt
INFO     lightning.pytorch.utilities.rank_zero:fit_loop.py:192 `Trainer.fit` stopped: `max_epochs=3` reached.
INFO     lightning.pytorch.utilities.rank_zero:setup.py:164 GPU available: False, used: False
INFO     lightning.pytorch.utilities.rank_zero:setup.py:167 TPU available: False, using: 0 TPU cores
INFO     lightning.pytorch.utilities.rank_zero:logger_connector.py:91 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.
INFO     lightning.pytorch.utilities.rank_zero:callback_connector.py:190 💡 Tip: For seamless cloud uploads and versioning, try installing [litmodels](https://pypi.org/project/litmodels/) to enable LitModelCheckpoint, which syncs automatically with the Lightning model registry.
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:81 Restoring states from the checkpoint path at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=19.ckpt
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:224 Restored all states from the checkpoint at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=19.ckpt
INFO     lightning.pytorch.utilities.rank_zero:fit_loop.py:192 `Trainer.fit` stopped: `max_epochs=3` reached.
INFO     lightning.pytorch.utilities.rank_zero:setup.py:164 GPU available: False, used: False
INFO     lightning.pytorch.utilities.rank_zero:setup.py:167 TPU available: False, using: 0 TPU cores
INFO     lightning.pytorch.utilities.rank_zero:logger_connector.py:91 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.
INFO     lightning.pytorch.utilities.rank_zero:callback_connector.py:190 💡 Tip: For seamless cloud uploads and versioning, try installing [litmodels](https://pypi.org/project/litmodels/) to enable LitModelCheckpoint, which syncs automatically with the Lightning model registry.
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:81 Restoring states from the checkpoint path at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=24.ckpt
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:224 Restored all states from the checkpoint at /tmp/pytest-of-root/pytest-18/checkpoints0/step-step=24.ckpt
INFO     lightning.pytorch.utilities.rank_zero:fit_loop.py:192 `Trainer.fit` stopped: `max_epochs=3` reached.
INFO     lightning.pytorch.utilities.rank_zero:setup.py:164 GPU available: False, used: False
INFO     lightning.pytorch.utilities.rank_zero:setup.py:167 TPU available: False, using: 0 TPU cores
INFO     lightning.pytorch.utilities.rank_zero:logger_connector.py:91 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.
INFO     lightning.pytorch.utilities.rank_zero:callback_connector.py:190 💡 Tip: For seamless cloud uploads and versioning, try installing [litmodels](https://pypi.org/project/litmodels/) to enable LitModelCheckpoint, which syncs automatically with the Lightning model registry.
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:81 Restoring states from the checkpoint path at /tmp/pytest-of-root/pytest-18/checkpoints0/epoch-epoch=0.ckpt
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:224 Restored all states from the checkpoint at /tmp/pytest-of-root/pytest-18/checkpoints0/epoch-epoch=0.ckpt
INFO     lightning.pytorch.utilities.rank_zero:fit_loop.py:192 `Trainer.fit` stopped: `max_epochs=3` reached.
INFO     lightning.pytorch.utilities.rank_zero:setup.py:164 GPU available: False, used: False
INFO     lightning.pytorch.utilities.rank_zero:setup.py:167 TPU available: False, using: 0 TPU cores
INFO     lightning.pytorch.utilities.rank_zero:logger_connector.py:91 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.
INFO     lightning.pytorch.utilities.rank_zero:callback_connector.py:190 💡 Tip: For seamless cloud uploads and versioning, try installing [litmodels](https://pypi.org/project/litmodels/) to enable LitModelCheckpoint, which syncs automatically with the Lightning model registry.
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:81 Restoring states from the checkpoint path at /tmp/pytest-of-root/pytest-18/checkpoints0/epoch-epoch=1.ckpt
INFO     lightning.pytorch.utilities.rank_zero:checkpoint_connector.py:224 Restored all states from the checkpoint at /tmp/pytest-of-root/pytest-18/checkpoints0/epoch-epoch=1.ckpt
INFO     lightning.pytorch.utilities.rank_zero:fit_loop.py:192 `Trainer.fit` stopped: `max_epochs=3` reached.
