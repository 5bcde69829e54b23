package com.example.notes;

import jakarta.validation.Valid;
import java.time.Instant;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.validation.BindingResult;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.servlet.mvc.support.RedirectAttributes;

/** The notes: a list, a form that creates one (post, redirect, get), a page per note. */
@Controller
public class NoteController {
    private final NoteRepository notes;

    public NoteController(NoteRepository notes) {
        this.notes = notes;
    }

    @GetMapping("/")
    public String home() {
        return "redirect:/notes";
    }

    @GetMapping("/notes")
    public String list(Model model) {
        model.addAttribute("notes", notes.findAllByOrderByIdDesc());
        return "list";
    }

    @GetMapping("/notes/new")
    public String form(Model model) {
        model.addAttribute("note", new Note());
        return "form";
    }

    /** Invalid: the form again (200), its fields as entered and the errors. Valid: saved,
     *  and a redirect to the list with a message the next page shows once. */
    @PostMapping("/notes")
    public String create(@Valid @ModelAttribute("note") Note note, BindingResult errors,
                         RedirectAttributes redirect) {
        if (errors.hasErrors()) {
            return "form";
        }
        note.setId(null);
        note.setCreated(Instant.now());
        Note saved = notes.save(note);
        redirect.addFlashAttribute("flash", "Note \u201c" + saved.getTitle() + "\u201d saved.");
        return "redirect:/notes";
    }

    @GetMapping("/notes/{id}")
    public String show(@PathVariable long id, Model model) {
        Note note = notes.findById(id).orElseThrow(
                () -> new ResponseStatusException(HttpStatus.NOT_FOUND, "no note " + id));
        model.addAttribute("note", note);
        return "show";
    }
}
