"""The render-and-compare metric: cameras, the Mitsuba renderer, image distances, LPIPS weights, head motion and the scores."""
