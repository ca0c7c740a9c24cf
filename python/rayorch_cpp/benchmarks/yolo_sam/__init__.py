"""YOLO then SAM: objects detected in each image, each box segmented, the masks drawn over
the image and saved with the detections (benchmark.py)."""
